import { randomUUID } from 'node:crypto';
import { LockManager, LockService } from '@app/distributed-lock';
import { RedisLockStrategy } from '@app/distributed-lock/strategies/redis';
import { redisLockKeys, redisSemaphoreKeys } from '@app/distributed-lock/strategies/redis/redis-keys';
import { Redis } from 'ioredis';
import { HeldBackProxy } from '../support/held-back-proxy';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const run = randomUUID().slice(0, 8);

/**
 * A release whose reply a cut connection lost: the server ran it, and ioredis sends it again once it has
 * reconnected. The second one finds the lock no longer this owner's, which must not read as a lock lost
 * before the release: it was held to the end, and freed by the release itself.
 */
describe('Redis: a release whose reply is lost to a cut', () => {
  const url = new URL(process.env.LOCK_TEST_REDIS_URL as string);
  let proxy: HeldBackProxy;
  let admin: Redis;

  beforeAll(async () => {
    proxy = new HeldBackProxy({ host: url.hostname, port: Number(url.port) });
    await proxy.start();
    admin = new Redis(url.toString());
  });

  afterAll(async () => {
    await proxy.close();
    admin.disconnect();
  });

  it('a permit: resolves, as the permit was held until the release gave it back', async () => {
    const manager = new LockManager(new RedisLockStrategy({ connection: `redis://127.0.0.1:${proxy.port}` }), { operationTimeout: 5_000 });
    const locks = new LockService(manager);
    const key = `release-cut:${run}:permit`;
    const holders = redisSemaphoreKeys('dlock:', key).keys[0];
    try {
      const permit = await locks.acquirePermit(key, { permits: 2 });
      expect(await admin.zcard(holders)).toBe(1);
      proxy.holdBack();
      const released = permit.release().then(
        () => 'resolved',
        (error: unknown) => error,
      );
      for (let waited = 0; (await admin.zcard(holders)) === 1; waited += 5) {
        if (waited > 5_000) throw new Error('the release never reached the server');
        await sleep(5);
      }
      proxy.cut();
      proxy.letThrough();
      expect(await released).toBe('resolved');
    } finally {
      await manager.close();
    }
  });

  for (const fair of [true, false]) {
    it(`${fair ? 'fair' : 'barging'}: resolves, as the lock was held until the release freed it`, async () => {
      const manager = new LockManager(new RedisLockStrategy({ connection: `redis://127.0.0.1:${proxy.port}`, fair }), { operationTimeout: 5_000 });
      const locks = new LockService(manager);
      const key = `release-cut:${run}:${fair}`;
      const lockKey = redisLockKeys('dlock:', key).keys[0];
      try {
        const lock = await locks.acquire(key);
        expect(await admin.exists(lockKey)).toBe(1);
        proxy.holdBack();
        const released = lock.release().then(
          () => 'resolved',
          (error: unknown) => error,
        );
        // The server ran the release; its reply is held back in the proxy.
        for (let waited = 0; (await admin.exists(lockKey)) === 1; waited += 5) {
          if (waited > 5_000) throw new Error('the release never reached the server');
          await sleep(5);
        }
        proxy.cut();
        proxy.letThrough();
        expect(await released).toBe('resolved');
        expect(lock.isHeld).toBe(false);
      } finally {
        await manager.close();
      }
    });
  }
});
