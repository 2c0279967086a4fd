import type { MemcacheClientOptions } from 'memcache-client';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { LOCK_DEFAULTS } from '../../locking/lock-options';
import { loadPeerDependency } from '../load-peer-dependency';
import type { MemcachedLockClient } from './memcached-client.type';

/** A client the strategy was given (never shut down by it) or one it created (shut down on close). */
export interface OwnedMemcachedClient {
  readonly client: MemcachedLockClient;
  readonly owned: boolean;
}

/**
 * Settings of a client the strategy creates, unless `connection` sets them: a command or a connection
 * attempt fails after the lock service's default operation timeout (ms), and small commands leave at once
 * (no Nagle delay).
 */
export const CREATED_CLIENT_DEFAULTS = Object.freeze({
  cmdTimeout: LOCK_DEFAULTS.operationTimeout,
  connectTimeout: LOCK_DEFAULTS.operationTimeout,
  noDelay: true,
});

/** Uses the user's client, or creates one (with the optional peer `memcache-client`) from "host:port" or options. */
export function resolveMemcachedClient(client: unknown, connection: unknown, strategy: string): OwnedMemcachedClient {
  const path = 'MemcachedLockStrategy options';
  if (client !== undefined && connection !== undefined) {
    throw new InvalidLockOptionsError(path, 'give either `client` (your memcache-client instance) or `connection` ("host:port" or memcache-client options), not both.');
  }
  if (client !== undefined) {
    const given = client as Partial<Record<keyof MemcachedLockClient, unknown>> | null;
    if (typeof given?.add !== 'function' || typeof given.gets !== 'function' || typeof given.cas !== 'function') {
      throw new InvalidLockOptionsError(`${path}.client`, 'expected a MemcacheClient from memcache-client (with add, gets and cas).');
    }
    return { client: client as MemcachedLockClient, owned: false };
  }
  if (connection === undefined) {
    throw new InvalidLockOptionsError(path, 'give `client` (your memcache-client instance) or `connection` (e.g. "127.0.0.1:11211").');
  }
  const options = typeof connection === 'string' ? { server: connection } : connection;
  if (typeof options !== 'object' || options === null || !('server' in options) || !options.server) {
    throw new InvalidLockOptionsError(`${path}.connection`, 'expected "host:port" or memcache-client options with a `server`.');
  }
  if (typeof options.server === 'string' && !/^[^\s:]+:\d{1,5}$/.test(options.server)) {
    throw new InvalidLockOptionsError(`${path}.connection`, `expected "host:port", got ${JSON.stringify(options.server)}.`);
  }
  const { MemcacheClient } = loadPeerDependency<typeof import('memcache-client')>('memcache-client', strategy);
  const created = new MemcacheClient({ ...CREATED_CLIENT_DEFAULTS, ...(options as MemcacheClientOptions) });
  return { client: created, owned: true };
}
