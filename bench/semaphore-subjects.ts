// Counting semaphores (issue 27): ours on Redis next to redis-semaphore's `Semaphore`, at the same size,
// in the same cases. A section holds one of the `SEMAPHORE_PERMITS` places; the gauge counts a violation
// only when more are inside at once.
import { LockManager, LockService } from '@app/distributed-lock';
import { RedisLockStrategy } from '@app/distributed-lock/strategies/redis';
import { Redis } from 'ioredis';
import { Semaphore } from 'redis-semaphore';
import type { BenchLock, BenchSubject } from './bench-subject';
import { env } from './bench-env';

/** The size of every semaphore of the benchmark. */
export const SEMAPHORE_PERMITS = 4;

/** The lease every semaphore is given, as the locks: long enough never to expire inside a section. */
const LEASE_MS = 30_000;

/** Our permits through the lock service, as an application takes them: acquirePermit, then release. `fair: false`: bounded barging. */
function oursOnRedis(fair: boolean): () => Promise<BenchLock> {
  return async () => {
    const manager = new LockManager(new RedisLockStrategy({ connection: env('LOCK_TEST_REDIS_URL'), fair }));
    const locks = new LockService(manager);
    return {
      async acquire(key, waitMs) {
        const permit = await locks.acquirePermit(key, { permits: SEMAPHORE_PERMITS, waitTimeout: waitMs });
        return async () => {
          await permit.release();
        };
      },
      close: () => manager.close(),
    };
  };
}

/** redis-semaphore's `Semaphore` with its defaults (retry every 10 ms, up to 10 s) and our lease. */
function redisSemaphorePeer(): () => Promise<BenchLock> {
  return async () => {
    const client = new Redis(env('LOCK_TEST_REDIS_URL'));
    return {
      async acquire(key) {
        const semaphore = new Semaphore(client, key, SEMAPHORE_PERMITS, { lockTimeout: LEASE_MS });
        await semaphore.acquire();
        return async () => {
          await semaphore.release();
        };
      },
      close: async () => {
        await client.quit();
      },
    };
  };
}

/** The semaphore subjects, in report order. */
export const SEMAPHORE_SUBJECTS: readonly BenchSubject[] = [
  {
    id: 'semaphore:redis',
    subject: `semaphore (redis, ${SEMAPHORE_PERMITS} permits)`,
    ours: true,
    backend: 'redis',
    settings: `LockService.acquirePermit on RedisLockStrategy, ${SEMAPHORE_PERMITS} permits, FIFO queue with inbox hand-over, fencing, watchdog lease 30 s`,
    crossProcess: true,
    permits: SEMAPHORE_PERMITS,
    create: oursOnRedis(true),
  },
  {
    id: 'semaphore:redis-barging',
    subject: `semaphore (redis-barging, ${SEMAPHORE_PERMITS} permits)`,
    ours: true,
    backend: 'redis',
    settings: `LockService.acquirePermit on RedisLockStrategy with fair: false, ${SEMAPHORE_PERMITS} permits, bounded barging (5 ms window), fencing, watchdog lease 30 s`,
    crossProcess: true,
    permits: SEMAPHORE_PERMITS,
    create: oursOnRedis(false),
  },
  {
    id: 'peer:redis-semaphore-semaphore@redis',
    subject: `redis-semaphore Semaphore (${SEMAPHORE_PERMITS} permits)`,
    ours: false,
    backend: 'redis',
    settings: `redis-semaphore Semaphore, ${SEMAPHORE_PERMITS} permits, defaults: retry every 10 ms up to 10 s, lockTimeout 30 s`,
    crossProcess: true,
    permits: SEMAPHORE_PERMITS,
    create: redisSemaphorePeer(),
  },
];
