import type { RedisOptions } from 'ioredis';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { loadPeerDependency } from '../load-peer-dependency';
import type { IoRedisClient, RedisLockClient } from './redis-client.type';

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
    return { client: client as unknown as RedisLockClient, owned: false };
  }
  if (connection === undefined) {
    throw new InvalidLockOptionsError(path, 'give `client` (your ioredis instance) or `connection` (e.g. "redis://127.0.0.1:6379").');
  }
  if (typeof connection !== 'string' && (typeof connection !== 'object' || connection === null)) {
    throw new InvalidLockOptionsError(`${path}.connection`, 'expected a redis:// URL or ioredis options.');
  }
  const { Redis } = loadPeerDependency<typeof import('ioredis')>('ioredis', strategy);
  // Fail fast while the server is down: a bounded number of retries per command, no infinite offline queue.
  const defaults: RedisOptions = { maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: false };
  const created = typeof connection === 'string' ? new Redis(connection, defaults) : new Redis({ ...defaults, ...connection });
  created.on('error', () => undefined);
  return { client: created as unknown as RedisLockClient, owned: true };
}
