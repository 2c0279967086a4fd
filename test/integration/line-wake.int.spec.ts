import { randomUUID } from 'node:crypto';
import { LockManager, LockService } from '@app/distributed-lock';
import { MemcachedLockStrategy } from '@app/distributed-lock/strategies/memcached';
import { memcachedServer } from '../support/memcached-subject';

// The first waiter of an instance's line polls a backend that keeps no queue (memcached). While its try is
// out it is not handed the lock (a hand-over and its own try would grant it twice); a release in that moment
// gives the key back to the backend and wakes it. That wake must not be lost: the waiter whose try comes
// back refused tries again at once, rather than sleeping its whole retry pause next to a free key.

const run = randomUUID().slice(0, 8);
const managers: LockManager[] = [];
afterAll(async () => {
  await Promise.all(managers.map((manager) => manager.close()));
});

describe('the first waiter of a line, woken while its own try was out', () => {
  it('tries again at once when its try comes back refused, not after its retry pause', async () => {
    const strategy = new MemcachedLockStrategy({ connection: memcachedServer() });
    const manager = new LockManager(strategy);
    const elsewhereManager = new LockManager(new MemcachedLockStrategy({ connection: memcachedServer() }));
    managers.push(manager, elsewhereManager);
    const locks = new LockService(manager);
    const elsewhere = new LockService(elsewhereManager);
    const key = `line-wake:${run}`;

    // The waiter's next try is answered by the server, then held here before the waiter reads it.
    let trapNextTry: (() => Promise<void>) | undefined;
    const tryAcquire = strategy.tryAcquire.bind(strategy);
    strategy.tryAcquire = async (request) => {
      const trap = trapNextTry;
      trapNextTry = undefined;
      const grant = await tryAcquire(request);
      if (trap) await trap();
      return grant;
    };

    const first = await elsewhere.acquire(key);
    let answerGoesOn = (): void => undefined;
    const answered = new Promise<void>((resolve) => {
      trapNextTry = () => {
        resolve();
        return new Promise<void>((goOn) => (answerGoesOn = goOn));
      };
    });
    // A retry pause far longer than anything else here: a lost wake shows as this pause.
    const waiting = locks.acquire(key, { waitTimeout: 30_000, retry: { initialDelay: 20_000, maxDelay: 20_000, jitter: 0 } });
    waiting.catch(() => undefined);
    // Refused by the server (the other instance holds the key); the answer is held back.
    await answered;
    expect(await first.release()).toBe(true);
    // Taken and released in this instance while the waiter's try is out: the release wakes the waiter.
    const barging = await locks.tryAcquire(key);
    expect(barging).not.toBeNull();
    expect(await barging?.release()).toBe(true);
    const wokenAt = Date.now();
    answerGoesOn();

    const got = await waiting;
    const waitedMs = Date.now() - wokenAt;
    expect(waitedMs).toBeLessThan(10_000);
    expect(await got.release()).toBe(true);
  }, 40_000);
});
