import type { RedisOptions } from 'ioredis';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { definedOptions } from '../defined-options';
import { loadPeerDependency } from '../load-peer-dependency';
import { assertServerUrl } from '../server-url';
import type { IoRedisClient, RedisLockClient } from './redis-client.type';

/**
 * What a Sentinel-backed client of ours needs so that no connection stays on a master Sentinel replaced
 * (see docs/strategies/redis.md, "Failover, measured"):
 * - `failoverDetector`: ioredis listens to Sentinel's `+switch-master` and drops the connection, then asks
 *   the Sentinels for the master again. Without it, a master that was frozen through its failover and
 *   comes back still takes itself for the master until Sentinel demotes it (about 10 s), and the
 *   connections that were on it keep locking there while the promoted replica grants the same locks.
 * - `disconnectTimeout`: a frozen master never answers the close: the socket is destroyed after 100 ms
 *   (ioredis waits 2 s) so the client moves at once.
 * - `retryStrategy` (as every client of ours, see RECONNECT_DEFAULTS): a client whose master died reaches
 *   the promoted one soon after Sentinel names it: the strategy checks every lease it holds at each
 *   reconnect (see RedisLeaseCheck).
 * - `reconnectOnError`: a master Sentinel demoted answers writes with READONLY: reconnect (to the master
 *   Sentinel names) instead of failing every command until the connection drops.
 */
const SENTINEL_DEFAULTS: RedisOptions = {
  failoverDetector: true,
  disconnectTimeout: 100,
  reconnectOnError: (error: Error) => error.message.startsWith('READONLY'),
};

/**
 * Every client of ours reconnects at most 500 ms after its last attempt. ioredis backs off exponentially
 * up to 5 s: a server back after a few seconds down would sit unused for longer than an operation
 * timeout, and a wait that needs it (a Redlock majority, the one Redis) would fail as silent meanwhile.
 */
const RECONNECT_DEFAULTS: RedisOptions = {
  retryStrategy: (attempt: number) => Math.min(50 * 2 ** (attempt - 1), 500),
};

/** A client the strategy was given (never closed by it) or one it created from connection options (closed by it). */
export interface OwnedRedisClient {
  readonly client: RedisLockClient;
  readonly owned: boolean;
}

/** Uses the user's client, or creates one (with the optional peer `ioredis`) from a URL or options. */
export function resolveRedisClient(
  client: IoRedisClient | undefined,
  connection: string | RedisOptions | undefined,
  strategy: string,
  path: string,
): OwnedRedisClient {
  if (client !== undefined && connection !== undefined) {
    throw new InvalidLockOptionsError(path, 'give either `client` (your ioredis instance) or `connection` (a URL or options), not both.');
  }
  if (client !== undefined) {
    if (typeof (client as { evalsha?: unknown }).evalsha !== 'function') {
      throw new InvalidLockOptionsError(`${path}.client`, 'expected an ioredis Redis or Cluster instance.');
    }
    const options = (client as { options?: Partial<RedisOptions> }).options;
    if (options?.sentinels && options.failoverDetector !== true) {
      throw new InvalidLockOptionsError(
        `${path}.client`,
        'a Sentinel client needs `failoverDetector: true` in its options: without it, its connection stays on a demoted master that ' +
          'still takes itself for the master after a failover (about 10 s), and two processes hold one lock. Or pass the Sentinel options as `connection`.',
      );
    }
    return { client: client as unknown as RedisLockClient, owned: false };
  }
  if (connection === undefined) {
    throw new InvalidLockOptionsError(path, 'give `client` (your ioredis instance) or `connection` (e.g. "redis://127.0.0.1:6379").');
  }
  if (typeof connection !== 'string' && (typeof connection !== 'object' || connection === null)) {
    throw new InvalidLockOptionsError(`${path}.connection`, 'expected a redis:// URL or ioredis options.');
  }
  // A Unix socket's path ("/run/redis.sock") is ioredis's other string form.
  if (typeof connection === 'string' && !connection.startsWith('/')) assertServerUrl(connection, `${path}.connection`, ['redis', 'rediss'], 'a Redis');
  const { Redis } = loadPeerDependency<typeof import('ioredis')>('ioredis', strategy);
  // Fail fast while the server is down: a bounded number of retries per command, no infinite offline queue.
  const defaults: RedisOptions = { maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: false, ...RECONNECT_DEFAULTS };
  const created =
    typeof connection === 'string'
      ? new Redis(connection, defaults)
      : new Redis({ ...defaults, ...(connection.sentinels ? SENTINEL_DEFAULTS : {}), ...definedOptions(connection) });
  created.on('error', () => undefined);
  return { client: created as unknown as RedisLockClient, owned: true };
}
