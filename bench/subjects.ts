import { InMemoryLockStrategy, LockManager, LockService, type LockStrategy } from '@app/distributed-lock';
import { RedisLockStrategy, RedlockStrategy } from '@app/distributed-lock/strategies/redis';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { BenchLock, BenchSubject } from './bench-subject';

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set; the benchmark starts its servers with the services tool`);
  return value;
}

/** Our lock service over a strategy, used the way an application would: acquire, then release. */
function ours(createStrategy: () => LockStrategy): () => Promise<BenchLock> {
  return async () => {
    const manager = new LockManager(createStrategy());
    const locks = new LockService(manager);
    return {
      async acquire(key, waitMs) {
        const lock = await locks.acquire(key, { waitTimeout: waitMs });
        return async () => {
          await lock.release();
        };
      },
      close: () => manager.close(),
    };
  };
}

const RELEASE_IF_OWNER = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/**
 * The raw floor: `SET key owner NX PX` to take, one `EVAL` (compare-and-delete) to release, on `urls`
 * (a majority needed when several). Waiting is a bare retry after yielding to the event loop: no
 * queue, no notification, no watchdog, no validation.
 */
function rawRedisFloor(urls: () => string[]): () => Promise<BenchLock> {
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

const redisUrls = (): string[] => env('LOCK_TEST_REDIS_URLS').split(',');

/** Every subject the benchmark knows, in report order. */
export const BENCH_SUBJECTS: readonly BenchSubject[] = [
  {
    subject: 'memory',
    ours: true,
    backend: 'memory',
    settings: 'InMemoryLockStrategy, FIFO',
    crossProcess: false,
    create: ours(() => new InMemoryLockStrategy()),
  },
  {
    subject: 'redis',
    ours: true,
    backend: 'redis',
    settings: 'RedisLockStrategy fair (FIFO hand-over), watchdog lease 30 s',
    crossProcess: true,
    create: ours(() => new RedisLockStrategy({ connection: env('LOCK_TEST_REDIS_URL') })),
  },
  {
    subject: 'redis-barging',
    ours: true,
    backend: 'redis',
    settings: 'RedisLockStrategy fair: false (woken by pub/sub, race), watchdog lease 30 s',
    crossProcess: true,
    create: ours(() => new RedisLockStrategy({ connection: env('LOCK_TEST_REDIS_URL'), fair: false, name: 'redis-barging' })),
  },
  {
    subject: 'redlock',
    ours: true,
    backend: 'redis5',
    settings: 'RedlockStrategy over 5 masters, node timeout 100 ms, watchdog lease 30 s',
    crossProcess: true,
    create: ours(() => new RedlockStrategy({ connections: redisUrls() })),
  },
  {
    subject: 'floor:redis SET NX PX + EVAL',
    ours: false,
    backend: 'redis',
    settings: 'raw ioredis, retry after setImmediate',
    crossProcess: true,
    create: rawRedisFloor(() => [env('LOCK_TEST_REDIS_URL')]),
  },
  {
    subject: 'floor:redis5 SET NX PX + EVAL on 5 masters',
    ours: false,
    backend: 'redis5',
    settings: 'raw ioredis, 5 masters in parallel, majority, retry after setImmediate',
    crossProcess: true,
    create: rawRedisFloor(redisUrls),
  },
];

export function benchSubject(name: string): BenchSubject {
  const found = BENCH_SUBJECTS.find((subject) => subject.subject === name);
  if (!found) throw new Error(`unknown benchmark subject "${name}"`);
  return found;
}
