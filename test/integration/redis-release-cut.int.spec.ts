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

  it('a lock passed to the next request of the instance (fair: false): the pass sent again finds it passed, and neither side reads a loss', async () => {
    const manager = new LockManager(new RedisLockStrategy({ connection: `redis://127.0.0.1:${proxy.port}`, fair: false }), { operationTimeout: 5_000 });
    const locks = new LockService(manager);
    const key = `release-cut:${run}:pass`;
    const lockKey = redisLockKeys('dlock:', key).keys[0];
    try {
      const holder = await locks.acquire(key);
      const successor = locks.acquire(key, { waitTimeout: 10_000 });
      await sleep(50);
      proxy.holdBack();
      const released = holder.release().then(
        () => 'resolved',
        (error: unknown) => error,
      );
      // The server ran the pass (the lock is the successor's now); its reply is held back in the proxy.
      for (let waited = 0; (await admin.hget(lockKey, 'o')) === holder.owner; waited += 5) {
        if (waited > 5_000) throw new Error('the pass never reached the server');
        await sleep(5);
      }
      proxy.cut();
      proxy.letThrough();
      expect(await released).toBe('resolved');
      const next = await successor;
      expect(next.isHeld).toBe(true);
      expect(next.fencingToken).toBeGreaterThan(holder.fencingToken as number);
      expect(await admin.hget(lockKey, 'o')).toBe(next.owner);
      await next.release();
      expect(await admin.hget(lockKey, 'o')).toBeNull();
    } finally {
      await manager.close();
    }
  });

  it('a lock passed to a request that gave up before the pass was answered, the answer lost to a cut: the lock does not stay taken by nobody', async () => {
    const manager = new LockManager(new RedisLockStrategy({ connection: `redis://127.0.0.1:${proxy.port}`, fair: false }), { operationTimeout: 5_000 });
    const locks = new LockService(manager);
    const other = new LockManager(new RedisLockStrategy({ connection: url.toString() }));
    const key = `release-cut:${run}:pass-gone`;
    const lockKey = redisLockKeys('dlock:', key).keys[0];
    try {
      const holder = await locks.acquire(key);
      const giveUp = new AbortController();
      const successor = locks.acquire(key, { waitTimeout: 10_000, signal: giveUp.signal }).then(
        (lock) => lock,
        () => undefined,
      );
      await sleep(50);
      proxy.holdBack();
      const released = holder.release().then(
        () => 'resolved',
        (error: unknown) => error,
      );
      for (let waited = 0; (await admin.hget(lockKey, 'o')) === holder.owner; waited += 5) {
        if (waited > 5_000) throw new Error('the pass never reached the server');
        await sleep(5);
      }
      giveUp.abort();
      await sleep(20);
      proxy.cut();
      proxy.letThrough();
      await released;
      expect(await successor).toBeUndefined();
      // Another instance gets the lock well before the successor's lease (30 s) would end.
      const next = await new LockService(other).acquire(key, { waitTimeout: 5_000 });
      await next.release();
    } finally {
      await manager.close();
      await other.close();
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
