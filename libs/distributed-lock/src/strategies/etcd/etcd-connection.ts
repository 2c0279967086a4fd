import type { IOptions } from 'etcd3';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { loadPeerDependency } from '../load-peer-dependency';
import { assertServerUrl } from '../server-url';
import type { EtcdLockClient } from './etcd-client.type';

/** The application's client (never closed by the strategy), or one the strategy created (closed on close). */
export interface OwnedEtcdClient {
  readonly client: EtcdLockClient;
  readonly owned: boolean;
}

/**
 * Uses the application's `Etcd3` client, or creates one from its options (hosts, TLS `credentials`,
 * `auth`). Exactly one of the two must be given.
 */
export function resolveEtcdClient(client: EtcdLockClient | undefined, connection: IOptions | undefined, strategy: string): OwnedEtcdClient {
  if (client !== undefined && connection !== undefined) {
    throw new InvalidLockOptionsError('EtcdLockStrategy options', 'give either `client` (your Etcd3 instance) or `connection` (its options), not both.');
  }
  if (client) return { client, owned: false };
  if (!connection || typeof connection !== 'object') {
    throw new InvalidLockOptionsError('EtcdLockStrategy options', 'give `client` (your Etcd3 instance) or `connection` (e.g. { hosts: "http://127.0.0.1:2379" }).');
  }
  const hosts: unknown = connection.hosts;
  for (const [i, host] of (Array.isArray(hosts) ? hosts : [hosts]).entries()) {
    if (typeof host === 'string') assertServerUrl(host, `EtcdLockStrategy options.connection.hosts${Array.isArray(hosts) ? `[${i}]` : ''}`, ['http', 'https'], 'an etcd');
  }
  const { Etcd3 } = loadPeerDependency<typeof import('etcd3')>('etcd3', strategy);
  return { client: new Etcd3(connection), owned: true };
}
