import { randomUUID } from 'node:crypto';
import { LockManager, LockService } from '@app/distributed-lock';
import { RedisLockStrategy } from '@app/distributed-lock/strategies/redis';
import { redisLockKeys } from '@app/distributed-lock/strategies/redis/redis-keys';
import { Redis } from 'ioredis';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const run = randomUUID().slice(0, 8);

/**
 * The fair Redis strategy tells a waiter of its hand-over on its instance's inbox channel; a message lost
 * there (the subscriber connection dropped: CLIENT KILL TYPE pubsub, a network blip) is covered by the
 * waiter's re-check every `recheckInterval`. Against a private server, whose pub/sub clients we may kill.
 */
describe('Redis fair hand-over with the inbox connection dropped', () => {
  let redis: PrivateRedis;
  let admin: Redis;
  const managers: LockManager[] = [];
  const serviceOf = (): LockService => {
    const manager = new LockManager(new RedisLockStrategy({ connection: redis.url, recheckInterval: 100 }));
    managers.push(manager);
    return new LockService(manager);
  };
  const queued = (key: string): Promise<number> => admin.zcard(redisLockKeys('dlock:', key).keys[1]);

  beforeAll(async () => {
    redis = await startPrivateRedis();
    admin = new Redis(redis.url);
  });

  afterAll(async () => {
    await Promise.all(managers.map((manager) => manager.close()));
    admin.disconnect();
    await redis.stop();
  });

  it('a reader that finds its lost hand-over by its re-check still excludes writers for its whole lease', async () => {
    const key = `inbox-reader:${run}`;
    const writerSide = serviceOf();
    const readerSide = serviceOf();
    const laterWriter = serviceOf();
    const writer = await writerSide.acquire(key);
    const reading = readerSide.acquire(key, { mode: 'shared', waitTimeout: 10_000 });
    for (let waited = 0; (await queued(key)) < 1; waited += 10) {
      if (waited > 5_000) throw new Error('the reader never queued');
      await sleep(10);
    }
    // The reader's inbox connection drops; the hand-over published before ioredis re-subscribes is lost.
    expect(Number(await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub'))).toBeGreaterThanOrEqual(1);
    expect(await writer.release()).toBe(true);
    const reader = await reading; // found by the re-check (recheckInterval 100 ms), lease 30 s by default
    expect(reader.isHeld).toBe(true);
    // Past the hand-over's claim (3 × recheckInterval = 300 ms), well inside the reader's 30 s lease.
    await sleep(1_000);
    expect(reader.isHeld).toBe(true);
    expect(reader.signal.aborted).toBe(false);
    const intruder = await laterWriter.tryAcquire(key);
    // A writer must not get the lock while a reader holds it.
    expect(intruder === null ? 'refused' : `granted (token ${String(intruder.fencingToken)})`).toBe('refused');
    await intruder?.release();
    await reader.release();
  }, 30_000);
});
