import { randomUUID } from 'node:crypto';
import { LockBackendUnavailableError, LockManager, LockService } from '@app/distributed-lock';
import { RedlockStrategy } from '@app/distributed-lock/strategies/redis';
import { redisLockKeys } from '@app/distributed-lock/strategies/redis/redis-keys';
import { Redis } from 'ioredis';
import { LatencyProxy } from '../support/latency-proxy';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const urls = (): string[] => {
  const value = process.env.LOCK_TEST_REDIS_URLS;
  if (!value) throw new Error('LOCK_TEST_REDIS_URLS is not set: run through npm test');
  return value.split(',');
};
const NAMESPACE = 'dlock:redlock:';

/**
 * A Redlock acquisition that every master ran, whose replies a shut link lost: the round fails, and its
 * release of the votes cannot get through either (the client fails queued calls after its reconnections
 * fail). The votes must still be given back once the links are back, not kept for the whole lease. On the
 * real masters, the caller behind proxies (150 ms each way) that are shut after every master ran it.
 */
describe('Redlock: votes of a failed round that a shut link kept', () => {
  let masters: Redis[];
  const closing: Array<() => Promise<unknown>> = [];
  beforeAll(() => {
    masters = urls().map((url) => new Redis(url));
  });
  afterEach(async () => {
    for (const close of closing.splice(0).reverse()) await close().catch(() => undefined);
  });
  afterAll(() => masters.forEach((master) => master.disconnect()));

  const storedIds = (key: string): Promise<Array<string | null>> =>
    Promise.all(masters.map((master, i) => (i === 0 ? master.hget(redisLockKeys(NAMESPACE, key).keys[0], 'o') : master.get(redisLockKeys(NAMESPACE, key).keys[0]))));

  it('are given back once the links are back: the next contender gets the lock in seconds, not at the lease end', async () => {
    const proxies = urls().map((url) => new LatencyProxy({ host: new URL(url).hostname, port: Number(new URL(url).port) }, 150));
    const ports = await Promise.all(proxies.map((proxy) => proxy.start()));
    closing.push(() => Promise.all(proxies.map((proxy) => proxy.close())));
    const behindStrategy = new RedlockStrategy({ connections: ports.map((port) => `redis://127.0.0.1:${port}`), nodeTimeout: 1_000 });
    const behindManager = new LockManager(behindStrategy, { operationTimeout: 5_000 });
    const otherManager = new LockManager(new RedlockStrategy({ connections: urls() }));
    closing.push(() => behindManager.close(), () => otherManager.close());
    // The connections through the proxies are made (each first call pays for the handshake's round trips).
    for (let tries = 0; ; tries += 1) {
      const up = await behindStrategy.ping().then(() => true, () => false);
      if (up) break;
      if (tries > 20) throw new Error('the masters behind the proxies never answered');
    }
    const key = `cut-redlock:${randomUUID()}`;
    const acquiring = new LockService(behindManager).tryAcquire(key, { ttl: 30_000 }).catch((error: unknown) => error);
    for (let waited = 0; (await storedIds(key)).includes(null) && waited < 5_000; waited += 2) await sleep(2);
    expect((await storedIds(key)).includes(null)).toBe(false); // every master ran it; the replies are in the proxies
    await Promise.all(proxies.map((proxy) => proxy.close()));
    expect(await acquiring).toBeInstanceOf(LockBackendUnavailableError);
    // Long enough for the client to fail every call it queued (its reconnections fail meanwhile).
    await sleep(3_000);
    await Promise.all(proxies.map((proxy, i) => proxy.start(ports[i])));
    const backAt = Date.now();
    const next = await new LockService(otherManager).acquire(key, { waitTimeout: 10_000 });
    // Give-backs are sent again at most 2 s apart; the lease had 26 s and more to run.
    expect(Date.now() - backAt).toBeLessThan(5_000);
    await next.release();
  }, 40_000);
});
