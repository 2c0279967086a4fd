import { randomUUID } from 'node:crypto';
import { LockBackendUnavailableError, LockManager, LockService } from '@app/distributed-lock';
import { RedisLockStrategy } from '@app/distributed-lock/strategies/redis';
import { LatencyProxy } from '../support/latency-proxy';

/**
 * A release the holder could not get to its server (the link down as the section ended: a failover, a
 * network cut) is sent again once the server can be reached: the next contender gets the lock seconds after
 * the link is back, not at the end of the holder's lease. On a real Redis: the holder talks to it through a
 * proxy that is shut (nothing listens) for the release and opened again on the same port.
 */
describe('a release that could not reach Redis (the link down, then back)', () => {
  it('frees the lock once the link is back, long before the lease ends; the holder heard that its release failed', async () => {
    const direct = new URL(process.env.LOCK_TEST_REDIS_URL ?? '');
    if (!direct.port) throw new Error('LOCK_TEST_REDIS_URL is not set: run through npm test');
    const proxy = new LatencyProxy({ host: direct.hostname, port: Number(direct.port) }, 0);
    const port = await proxy.start();
    const holderSide = new LockManager(new RedisLockStrategy({ connection: `redis://127.0.0.1:${port}` }), { operationTimeout: 1_000 });
    const other = new LockManager(new RedisLockStrategy({ connection: direct.href }));
    const key = `release-retry:${randomUUID()}`;
    try {
      const lock = await new LockService(holderSide).acquire(key, { ttl: 30_000 });
      await proxy.close();
      await expect(lock.release()).rejects.toBeInstanceOf(LockBackendUnavailableError);
      // The link is back 500 ms later; the lease has 29 s and more to run.
      await new Promise((resolve) => setTimeout(resolve, 500));
      await proxy.start(port);
      const backAt = Date.now();
      const next = await new LockService(other).acquire(key, { waitTimeout: 10_000 });
      // Retries are at most 2 s apart, and the client reconnects within about a second.
      expect(Date.now() - backAt).toBeLessThan(5_000);
      await next.release();
    } finally {
      await other.close();
      await holderSide.close();
      await proxy.close().catch(() => undefined);
    }
  }, 30_000);
});
