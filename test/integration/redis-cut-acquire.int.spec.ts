import { randomUUID } from 'node:crypto';
import { LockBackendUnavailableError, LockManager, LockService } from '@app/distributed-lock';
import { RedisLockStrategy } from '@app/distributed-lock/strategies/redis';
import { redisLockKeys, redisSemaphoreKeys } from '@app/distributed-lock/strategies/redis/redis-keys';
import { Redis } from 'ioredis';
import { LatencyProxy } from '../support/latency-proxy';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * An acquisition whose connection is cut after Redis ran it and before its reply came back: Redis holds
 * the grant, the caller never heard of it. The client sends the call again once reconnected, or fails it
 * if it cannot reconnect in time. Either way the lock must not stay taken for its whole lease by nobody.
 * On a real Redis, the caller behind a proxy (100 ms each way) that is cut, or shut, while the reply is in it.
 */
describe('a Redis acquisition whose reply was cut off', () => {
  const direct = (): URL => {
    const url = new URL(process.env.LOCK_TEST_REDIS_URL ?? '');
    if (!url.port) throw new Error('LOCK_TEST_REDIS_URL is not set: run through npm test');
    return url;
  };
  let admin: Redis;
  const closing: Array<() => Promise<unknown>> = [];

  beforeAll(() => {
    admin = new Redis(direct().href);
  });

  afterEach(async () => {
    for (const close of closing.splice(0).reverse()) await close().catch(() => undefined);
  });

  afterAll(() => admin.disconnect());

  /** A lock service behind its own proxy, and another connected straight to Redis. */
  const setUp = async (): Promise<{ proxy: LatencyProxy; port: number; behind: LockService; other: LockService }> => {
    const proxy = new LatencyProxy({ host: direct().hostname, port: Number(direct().port) }, 100);
    const port = await proxy.start();
    const behindStrategy = new RedisLockStrategy({ connection: `redis://127.0.0.1:${port}` });
    const behindManager = new LockManager(behindStrategy, { operationTimeout: 5_000 });
    const otherManager = new LockManager(new RedisLockStrategy({ connection: direct().href }));
    closing.push(() => proxy.close(), () => behindManager.close(), () => otherManager.close());
    // A first call opens the connection through the proxy before the one that is cut.
    await behindStrategy.ping();
    return { proxy, port, behind: new LockService(behindManager), other: new LockService(otherManager) };
  };

  /** Resolves once Redis holds `key` (a lock, or a permit of a semaphore) for someone: the acquisition ran there, its reply is on its way back. */
  const grantedOnServer = async (key: string, permit = false): Promise<void> => {
    const held = (): Promise<number> => (permit ? admin.zcard(redisSemaphoreKeys('dlock:', key).keys[0]) : admin.hexists(redisLockKeys('dlock:', key).keys[0], 'o'));
    for (let waited = 0; waited < 5_000; waited += 2) {
      if ((await held()) > 0) return;
      await sleep(2);
    }
    throw new Error('the acquisition never reached Redis');
  };

  it('the connection is cut and made again: the call sent again holds the lock once, and one release frees it', async () => {
    const { proxy, behind, other } = await setUp();
    const key = `cut-resent:${randomUUID()}`;
    const acquiring = behind.tryAcquire(key, { ttl: 30_000 });
    await grantedOnServer(key);
    proxy.cut(); // the client reconnects through the proxy and sends the acquisition again
    const lock = await acquiring;
    expect(lock?.isHeld).toBe(true);
    expect(await lock?.release()).toBe(true);
    // Released: free for the next one at once, not in 30 s.
    const next = await other.tryAcquire(key);
    expect(next).not.toBeNull();
    await next?.release();
  }, 20_000);

  it('the connection cannot be made again in time: the caller is told, and the grant it never heard of is given back once the link is back', async () => {
    const { proxy, port, behind, other } = await setUp();
    const key = `cut-failed:${randomUUID()}`;
    const acquiring = behind.tryAcquire(key, { ttl: 30_000 }).catch((error: unknown) => error);
    await grantedOnServer(key);
    await proxy.close(); // nothing listens: the client's reconnections fail, and it fails the call
    expect(await acquiring).toBeInstanceOf(LockBackendUnavailableError);
    await sleep(500);
    await proxy.start(port);
    const backAt = Date.now();
    const next = await other.acquire(key, { waitTimeout: 10_000 });
    // The lease has 29 s and more to run; the give-back is sent again at most 2 s apart.
    expect(Date.now() - backAt).toBeLessThan(5_000);
    await next.release();
  }, 30_000);

  it('a permit: sent again after a cut, its weight counts once, and its release frees all of it', async () => {
    const { proxy, behind, other } = await setUp();
    const key = `cut-permit-resent:${randomUUID()}`;
    const acquiring = behind.tryAcquirePermit(key, { permits: 2, weight: 1, ttl: 30_000 });
    await grantedOnServer(key, true);
    proxy.cut();
    const permit = await acquiring;
    expect(permit).not.toBeNull();
    await permit?.release();
    // Both places are free again: a weight of 2 fits at once.
    const whole = await other.tryAcquirePermit(key, { permits: 2, weight: 2 });
    expect(whole).not.toBeNull();
    await whole?.release();
  }, 20_000);

  it('a permit whose caller was told the call failed is given back once the link is back', async () => {
    const { proxy, port, behind, other } = await setUp();
    const key = `cut-permit-failed:${randomUUID()}`;
    const acquiring = behind.tryAcquirePermit(key, { permits: 1, ttl: 30_000 }).catch((error: unknown) => error);
    await grantedOnServer(key, true);
    await proxy.close();
    expect(await acquiring).toBeInstanceOf(LockBackendUnavailableError);
    await sleep(500);
    await proxy.start(port);
    const backAt = Date.now();
    const next = await other.acquirePermit(key, { permits: 1, waitTimeout: 10_000 });
    expect(Date.now() - backAt).toBeLessThan(5_000);
    await next.release();
  }, 30_000);
});
