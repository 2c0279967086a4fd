import { createRequire } from 'node:module';
import type { IOptions } from 'etcd3';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { definedOptions } from '../defined-options';
import { loadPeerDependency } from '../load-peer-dependency';
import { assertServerUrl } from '../server-url';
import type { EtcdLockClient } from './etcd-client.type';
import { EtcdCallsInFlight } from './etcd-calls-in-flight';

/**
 * The application's client (never closed by the strategy), or one the strategy created (closed on close,
 * with its calls still in flight cancelled).
 */
export interface OwnedEtcdClient {
  readonly client: EtcdLockClient;
  readonly owned: boolean;
  /** A client the strategy created: its calls in flight. */
  readonly calls?: EtcdCallsInFlight;
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
  const etcd3 = loadPeerDependency<typeof import('etcd3')>('etcd3', strategy);
  const faultHandling = { ...quickRecovery(etcd3.isRecoverableError), ...definedOptions(connection.faultHandling ?? {}) };
  const calls = new EtcdCallsInFlight();
  return { client: new etcd3.Etcd3({ ...connection, faultHandling, ...calls.clientOptions(connection) }), owned: true, calls };
}

/** What the strategy uses of cockatiel, the resilience library etcd3 depends on (and builds its policies with). */
interface Cockatiel {
  circuitBreaker(policy: unknown, options: { halfOpenAfter: number; breaker: unknown }): NonNullable<IOptions['faultHandling']>['host'] extends ((host: string) => infer P) | undefined ? P : never;
  handleWhen(predicate: (error: Error) => boolean): unknown;
  ConsecutiveBreaker: new (threshold: number) => unknown;
  ExponentialBackoff: new (options: { initialDelay: number; maxDelay: number }) => object;
}

type WatchBackoff = NonNullable<NonNullable<IOptions['faultHandling']>['watchBackoff']>;

/** How soon a client the strategy made tries a member again after it failed: 0.5 s, as the Redis strategies reconnect. */
const HALF_OPEN_AFTER_MS = 500;
/** The longest pause between two tries to watch again (etcd3: 30 s). */
const LONGEST_WATCH_BACKOFF_MS = 1_000;

/**
 * etcd3's own fault handling, with shorter pauses. By default it stops calling a member for 5 s after 3
 * failed calls, and backs a broken watch off for up to 30 s: a member back after a short outage would be
 * shut out past an operation timeout (every call failing at once meanwhile), a lease shorter than that
 * would run out unrenewed, and a waiter would hear of releases only at its re-checks. The policies are
 * etcd3's own kind, built with the cockatiel that etcd3 itself loads; a `faultHandling` entry the user
 * gives wins.
 */
function quickRecovery(isRecoverableError: (error: Error) => boolean): IOptions['faultHandling'] {
  const cockatiel = createRequire(require.resolve('etcd3'))('cockatiel') as Cockatiel;
  return {
    host: () => cockatiel.circuitBreaker(cockatiel.handleWhen(isRecoverableError), { halfOpenAfter: HALF_OPEN_AFTER_MS, breaker: new cockatiel.ConsecutiveBreaker(3) }),
    // etcd3 declares a backoff here, but calls next() on what it is given first, as on its own default
    // (a backoff factory): the factory, like the default.
    watchBackoff: new cockatiel.ExponentialBackoff({ initialDelay: 128, maxDelay: LONGEST_WATCH_BACKOFF_MS }) as WatchBackoff,
  };
}
