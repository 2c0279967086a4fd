/** The Redis keys and channel of one lock. */
export interface RedisLockKeys {
  /** [lock, queue, waiters, fence, readers]: the KEYS of every script. */
  readonly keys: readonly [string, string, string, string, string];
  readonly channel: string;
}

/**
 * Names the keys of a lock. The lock key goes inside a hash tag (`{…}`) so that the lock, its queue, its
 * waiters and its fencing counter live in one Redis Cluster slot and one script can touch them all.
 * Braces and "%" in the user's key are percent-encoded so the tag cannot be cut short.
 */
export function redisLockKeys(namespace: string, key: string): RedisLockKeys {
  const tag = key.replace(/[%{}]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  const base = `${namespace}{${tag}}`;
  return { keys: [`${base}:lock`, `${base}:queue`, `${base}:waiters`, `${base}:fence`, `${base}:readers`], channel: `${base}:events` };
}

/**
 * The key names of recently used locks, so that a hot key's acquire and release do not rebuild seven
 * strings each (an escape pass and six concatenations per call, and their garbage). Bounded:
 * cleared when it holds `limit` locks, so many distinct keys cost a rebuild now and then, never memory.
 */
export class RedisLockKeyNames {
  private readonly cache = new Map<string, RedisLockKeys>();

  constructor(
    readonly namespace: string,
    private readonly limit = 1_000,
  ) {}

  of(key: string): RedisLockKeys {
    let names = this.cache.get(key);
    if (!names) {
      if (this.cache.size >= this.limit) this.cache.clear();
      names = redisLockKeys(this.namespace, key);
      this.cache.set(key, names);
    }
    return names;
  }
}
