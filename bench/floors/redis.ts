// The raw Redis floors: the bare server operations of a Redis lock, and the Redis strategy's own scripts.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { redisLockKeys, type RedisLockKeys } from '@app/distributed-lock/strategies/redis/redis-keys';
import { ACQUIRE_SCRIPT, RELEASE_SCRIPT } from '@app/distributed-lock/strategies/redis/redis-lock.scripts';
import type { BenchLock } from '../bench-subject';
import { env } from '../bench-env';
import { yieldLoop } from './yield-loop';

const RELEASE_IF_OWNER = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/**
 * The raw floor: `SET key owner NX PX` to take, one `EVAL` (compare-and-delete) to release, on `urls`
 * (a majority needed when several). Waiting is a bare retry after yielding to the event loop: no
 * queue, no notification, no watchdog, no validation.
 */
export function rawRedisFloor(urls: () => string[]): () => Promise<BenchLock> {
  return async () => {
    const clients = urls().map((url) => new Redis(url));
    const quorum = Math.floor(clients.length / 2) + 1;
    return {
      async acquire(key, waitMs) {
        const owner = randomUUID();
        const deadline = Date.now() + waitMs;
        for (;;) {
          const replies = await Promise.all(clients.map((client) => client.set(key, owner, 'PX', 30_000, 'NX')));
          const got = replies.filter((reply) => reply === 'OK').length;
          if (got >= quorum) {
            return async () => {
              await Promise.all(clients.map((client) => client.eval(RELEASE_IF_OWNER, 1, key, owner)));
            };
          }
          if (got > 0) await Promise.all(clients.map((client) => client.eval(RELEASE_IF_OWNER, 1, key, owner)));
          if (Date.now() > deadline) throw new Error('timeout');
          await new Promise((resolve) => setImmediate(resolve));
        }
      },
      close: async () => {
        await Promise.all(clients.map((client) => client.quit()));
      },
    };
  };
}

/**
 * The Redis strategy's own server operations, raw: its acquire script (a plain try) and its release
 * script by EVALSHA through ioredis, with the arguments the strategy sends; a busy lock is retried after
 * yielding. Nothing of the library runs: no key-name cache, no validation, no watchdog, no lock service.
 * Against `floor:redis SET NX PX + EVAL` it shows what the FIFO queue, the fencing counter and re-entrancy
 * cost the server; the strategy against it, what the library's code adds.
 */
export function rawRedisScriptsFloor(): () => Promise<BenchLock> {
  return async () => {
    const client = new Redis(env('LOCK_TEST_REDIS_URL'));
    const [acquireSha, releaseSha] = (await Promise.all([ACQUIRE_SCRIPT, RELEASE_SCRIPT].map((script) => client.script('LOAD', script.source)))) as string[];
    const names = new Map<string, RedisLockKeys>();
    return {
      async acquire(key, waitMs) {
        let lock = names.get(key);
        if (!lock) names.set(key, (lock = redisLockKeys('bench-raw:', key)));
        const { keys, channel } = lock;
        const owner = randomUUID();
        const deadline = Date.now() + waitMs;
        for (;;) {
          const [held] = (await client.evalsha(acquireSha, keys.length, ...keys, owner, channel, 30_000, '1', '0', 1_500, 'x')) as [number, unknown];
          if (held === 1) {
            return async () => {
              await client.evalsha(releaseSha, keys.length, ...keys, owner, channel);
            };
          }
          if (Date.now() > deadline) throw new Error('timeout');
          await yieldLoop();
        }
      },
      close: async () => {
        await client.quit();
      },
    };
  };
}
