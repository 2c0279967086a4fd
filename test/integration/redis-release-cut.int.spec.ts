import { randomUUID } from 'node:crypto';
import { LockManager, LockService } from '@app/distributed-lock';
import { RedisLockStrategy } from '@app/distributed-lock/strategies/redis';
import { redisLockKeys, redisSemaphoreKeys } from '@app/distributed-lock/strategies/redis/redis-keys';
import { RELEASE_SCRIPT, TRANSFER_SCRIPT } from '@app/distributed-lock/strategies/redis/redis-lock.scripts';
import { PERMIT_RELEASE_SCRIPT } from '@app/distributed-lock/strategies/redis/redis-semaphore.scripts';
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

  /**
   * Sends `release` with its reply held back in the proxy, waits until the server ran it (`ran`), lets
   * `meanwhile` happen, then cuts the connection: the reply is lost, and ioredis sends the call again once
   * it has reconnected. Resolves 'resolved', or the error the release ended with.
   */
  const releaseWithReplyLost = async (release: () => Promise<unknown>, ran: () => Promise<boolean>, meanwhile?: () => Promise<void>): Promise<unknown> => {
    // The call goes out as EVALSHA: on a server without the script yet (a fresh one, this spec alone), its
    // NOSCRIPT answer would be held back too, and the EVAL that follows it never sent.
    for (const script of [RELEASE_SCRIPT, TRANSFER_SCRIPT, PERMIT_RELEASE_SCRIPT]) await admin.script('LOAD', script.source);
    proxy.holdBack();
    const released = release().then(
      () => 'resolved',
      (error: unknown) => error,
    );
    for (let waited = 0; !(await ran()); waited += 5) {
      if (waited > 5_000) throw new Error('the call never reached the server');
      await sleep(5);
    }
    await meanwhile?.();
    proxy.cut();
    proxy.letThrough();
    return released;
  };

  it('a permit: resolves, as the permit was held until the release gave it back', async () => {
    const manager = new LockManager(new RedisLockStrategy({ connection: `redis://127.0.0.1:${proxy.port}` }), { operationTimeout: 5_000 });
    const locks = new LockService(manager);
    const key = `release-cut:${run}:permit`;
    const holders = redisSemaphoreKeys('dlock:', key).keys[0];
    try {
      const permit = await locks.acquirePermit(key, { permits: 2 });
      expect(await admin.zcard(holders)).toBe(1);
      expect(await releaseWithReplyLost(() => permit.release(), async () => (await admin.zcard(holders)) === 0)).toBe('resolved');
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
      // The server ran the pass when the lock is the successor's; its reply is held back in the proxy.
      expect(await releaseWithReplyLost(() => holder.release(), async () => (await admin.hget(lockKey, 'o')) !== holder.owner)).toBe('resolved');
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
      await releaseWithReplyLost(
        () => holder.release(),
        async () => (await admin.hget(lockKey, 'o')) !== holder.owner,
        async () => {
          giveUp.abort();
          await sleep(20);
        },
      );
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
        expect(await releaseWithReplyLost(() => lock.release(), async () => (await admin.exists(lockKey)) === 0)).toBe('resolved');
        expect(lock.isHeld).toBe(false);
      } finally {
        await manager.close();
      }
    });
  }
});
