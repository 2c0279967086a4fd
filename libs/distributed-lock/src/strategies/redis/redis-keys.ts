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
  const base = taggedBase(namespace, key);
  return { keys: [`${base}:lock`, `${base}:queue`, `${base}:waiters`, `${base}:fence`, `${base}:readers`], channel: `${base}:events` };
}

/**
 * Names the keys of a counting semaphore (see redis-semaphore.scripts.ts): [holders, queue, waiters, info],
 * in the same hash slot as a lock of the same name, but never the same keys.
 */
export function redisSemaphoreKeys(namespace: string, key: string): RedisSemaphoreKeys {
  const base = taggedBase(namespace, key);
  return { keys: [`${base}:permits`, `${base}:permit-queue`, `${base}:permit-waiters`, `${base}:permit-info`] };
}

/** The Redis keys of one semaphore: [holders, queue, waiters, info], the KEYS of every semaphore script. */
export interface RedisSemaphoreKeys {
  readonly keys: readonly [string, string, string, string];
}

/** The namespace and the key in a hash tag, braces and "%" percent-encoded so the tag cannot be cut short. */
function taggedBase(namespace: string, key: string): string {
  return `${namespace}{${encodedTag(key)}}`;
}

/** A key as it stands in its hash tag: braces and "%" percent-encoded ("%25", "%7B", "%7D"), each character alone. */
export function encodedTag(key: string): string {
  return key.replace(/[%{}]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/**
 * The key names of recently used locks, so that a hot key's acquire and release do not rebuild seven
 * strings each (an escape pass and six concatenations per call, and their garbage). Bounded:
 * cleared when it holds `limit` locks, so many distinct keys cost a rebuild now and then, never memory.
 */
export class RedisLockKeyNames<K = RedisLockKeys> {
  private readonly cache = new Map<string, K>();

  constructor(
    readonly namespace: string,
    private readonly limit = 1_000,
    /** How a key is named: a lock's keys (the default, where K is RedisLockKeys), or a semaphore's (`redisSemaphoreKeys`). */
    private readonly naming: (namespace: string, key: string) => K = redisLockKeys as unknown as (namespace: string, key: string) => K,
  ) {}

  of(key: string): K {
    let names = this.cache.get(key);
    if (!names) {
      if (this.cache.size >= this.limit) this.cache.clear();
      names = this.naming(this.namespace, key);
      this.cache.set(key, names);
    }
    return names;
  }
}
