import { randomUUID } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import {
  DistributedLockError,
  InvalidLockKeyError,
  InvalidLockOptionsError,
  LockAcquireTimeoutError,
  LockLostError,
  LockManager,
  LockService,
  type LockHandle,
  type LockStrategy,
} from '@app/distributed-lock';
import { setUpSubject, type ContractSubject } from './contract-subject';
import { startHolder } from '../support/holder-process';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves how a promise ended and after how many ms, without throwing. */
async function settle<T>(promise: Promise<T>): Promise<{ value?: T; error?: unknown; ms: number }> {
  const started = Date.now();
  try {
    return { value: await promise, ms: Date.now() - started };
  } catch (error) {
    return { error, ms: Date.now() - started };
  }
}

function describeFailure(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? ` (cause: ${error.cause.name}: ${error.cause.message} ${String((error.cause as { code?: unknown }).code ?? '')})` : '';
  return `${error.name}: ${error.message}${cause}`;
}

/**
 * The promises the README makes, each attacked through the public API the way a user (or a failing
 * machine) would break it: odd numbers, odd keys, keys deleted behind the holder's back, long waits,
 * and shutdown while others wait. Every strategy runs all of it against its real server.
 */
export function describePromisesContract(subject: ContractSubject): void {
  describe(`promises kept: ${subject.name}`, () => {
    let strategy: LockStrategy;
    let manager: LockManager;
    let locks: LockService;
    let contender: LockService;
    let contenderManager: LockManager;
    const run = randomUUID().slice(0, 8);
    let seq = 0;
    const key = (): string => `promise:${run}:${(seq += 1)}`;
    let tearDown: (() => Promise<void>) | undefined;
    const extraManagers: LockManager[] = [];

    /** A further, independent client (another app instance) that the suite closes at the end. */
    const anotherInstance = async (): Promise<{ manager: LockManager; locks: LockService }> => {
      const extra = new LockManager(await subject.create());
      extraManagers.push(extra);
      return { manager: extra, locks: new LockService(extra) };
    };

    beforeAll(async () => {
      tearDown = await setUpSubject(subject);
      strategy = await subject.create();
      manager = new LockManager(strategy);
      locks = new LockService(manager);
      contenderManager = new LockManager(await subject.create());
      contender = new LockService(contenderManager);
    });

    afterAll(async () => {
      await Promise.all([manager, contenderManager, ...extraManagers].map((m) => m?.close().catch(() => undefined)));
      await tearDown?.();
    }, 30_000);

    describe('durations are whole milliseconds (fractions rounded up)', () => {
      it('takes, hands over and frees a lock with a fractional ttl', async () => {
        const k = key();
        const first = await locks.acquire(k, { ttl: 10_000 / 3 });
        // A waiter with a fractional lease queues behind it (a hand-over on queueing strategies).
        const second = contender.acquire(k, { ttl: 1000.5, waitTimeout: 10_000 });
        await sleep(100);
        expect(await first.release()).toBe(true);
        const held = await second;
        expect(held.isHeld).toBe(true);
        expect(await held.release()).toBe(true);
        const again = await locks.tryAcquire(k);
        expect(again).not.toBeNull();
        await again?.release();
      });

      if (subject.capabilities.crossProcess) {
        it('frees a crashed holder’s fractional lease on its own (holder process SIGKILLed)', async () => {
          const k = key();
          const holder = await startHolder(subject.name, k, 1200.7);
          holder.child.kill('SIGKILL');
          await holder.exited;
          const next = await locks.acquire(k, { waitTimeout: 10_000 });
          expect(next.isHeld).toBe(true);
          await next.release();
        }, 40_000);
      }

      it('applies fractional module defaults and extensions', async () => {
        const k = key();
        // A wait of a few round trips even with the server 20 ms away (the suite also runs across zones):
        // a wait shorter than the acquisition's round trips is a timeout by design.
        const service = locks.withOptions({ defaults: { ttl: 2000.25, waitTimeout: 999.9 } });
        const lock = await service.acquire(k);
        await lock.extend(3000.5);
        expect(lock.isHeld).toBe(true);
        expect(await lock.release()).toBe(true);
      });
    });

    describe('extend(ttl) refuses what it cannot honour', () => {
      it.each([[0], [-1], [Number.NaN], [3e9], [Number.POSITIVE_INFINITY], ['100'], [5]])('extend(%p) throws InvalidLockOptionsError and the lock stays held', async (ttl) => {
        const k = key();
        const lock = await locks.acquire(k, { ttl: 5_000 });
        await expect(lock.extend(ttl as number)).rejects.toBeInstanceOf(InvalidLockOptionsError);
        expect(lock.isHeld).toBe(true);
        expect(await contender.tryAcquire(k)).toBeNull();
        expect(await lock.release()).toBe(true);
      });
    });

    describe('a lost lock is reported when the section ends', () => {
      it('withLock rejects with LockLostError when the key was removed behind the holder (nobody noticed yet)', async () => {
        const k = key();
        const outcome = await settle(
          locks.withLock(k, async () => {
            await subject.removeBehindBack(strategy, k);
            // Someone else may take it now; the section ends before any extension could notice.
            return 'done';
          }),
        );
        expect(outcome.error).toBeInstanceOf(LockLostError);
        expect((outcome.error as Error).message).toMatch(/release|removed|session|lost/);
        // The section ran to its end: what it returned is on the error, for a caller whose writes were fenced.
        expect((outcome.error as LockLostError).sectionResult).toEqual({ value: 'done' });
      });

      it('withLock rejects with LockLostError, the section\'s own failure as its cause, when a failing section\'s key was removed and only the release found out', async () => {
        const k = key();
        const outcome = await settle(
          locks.withLock(k, async () => {
            await subject.removeBehindBack(strategy, k);
            throw new Error('the write failed');
          }),
        );
        expect(outcome.error).toBeInstanceOf(LockLostError);
        expect(((outcome.error as LockLostError).cause as Error)?.message).toBe('the write failed');
        expect((outcome.error as LockLostError).sectionResult).toBeUndefined();
      });

      it('a second holder gets in after the removal, and the first section still learns it was not alone', async () => {
        const k = key();
        let second: LockHandle | undefined;
        const outcome = await settle(
          locks.withLock(k, async () => {
            await subject.removeBehindBack(strategy, k);
            second = await contender.acquire(k, { waitTimeout: 10_000 });
            return 'done';
          }),
        );
        expect(outcome.error).toBeInstanceOf(LockLostError);
        expect((outcome.error as LockLostError).sectionResult).toEqual({ value: 'done' });
        expect(second?.isHeld).toBe(true);
        await second?.release();
      });
    });

    if (subject.pushesRemoval) {
      it('rejects with the LockLostError, carrying the section\'s own failure as cause, when a section fails after its lock was lost', async () => {
        const k = key();
        const outcome = await settle(
          locks.withLock(k, async (lock) => {
            await subject.removeBehindBack(strategy, k);
            for (let waited = 0; !lock.signal.aborted && waited < 3_000; waited += 20) await sleep(20);
            throw new Error('the write failed');
          }),
        );
        expect(outcome.error).toBeInstanceOf(LockLostError);
        expect(((outcome.error as LockLostError).cause as Error)?.message).toBe('the write failed');
        expect((outcome.error as LockLostError).sectionResult).toBeUndefined();
      });

      it('tells a holder at once, while its section runs, that its lock was removed (long before any extension)', async () => {
        const k = key();
        const lock = await locks.acquire(k); // 30 s lease: the first extension would come 10 s in
        await sleep(200);
        const removedAt = Date.now();
        await subject.removeBehindBack(strategy, k);
        const reason = await new Promise<unknown>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error('not told within 3 s')), 3_000);
          lock.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            resolve(lock.signal.reason);
          });
          if (lock.signal.aborted) resolve(lock.signal.reason);
        });
        expect(reason).toBeInstanceOf(LockLostError);
        expect(Date.now() - removedAt).toBeLessThan(3_000);
        expect(await lock.release()).toBe(false);
      });
    }

    describe('a lease counts from the grant, not from before the wait', () => {
      // Both waits at once, on keys of their own: each takes 3 to 4 s of waiting, run on every subject.
      it('a waiter granted after a wait longer than its ttl keeps the lock with its watchdog, and one with an explicit ttl is not reported lost at once', async () => {
        const watched = async (): Promise<void> => {
          const k = key();
          const holder = await locks.acquire(k);
          const waiting = contender.acquire(k, { ttl: 1_500, autoExtend: true, waitTimeout: 15_000 });
          await sleep(2_500);
          await holder.release();
          const lock = await waiting;
          await sleep(1_500);
          expect(lock.signal.aborted).toBe(false);
          expect(await locks.tryAcquire(k)).toBeNull();
          expect(await lock.release()).toBe(true);
        };
        const explicit = async (): Promise<void> => {
          const k = key();
          const holder = await locks.acquire(k);
          const waiting = contender.acquire(k, { ttl: 2_000, waitTimeout: 15_000 });
          await sleep(2_500);
          await holder.release();
          const lock = await waiting;
          await sleep(500);
          expect(lock.signal.aborted).toBe(false);
          expect(await lock.release()).toBe(true);
        };
        await Promise.all([watched(), explicit()]);
      }, 20_000);
    });

    describe('close() ends every wait promptly and strands nothing', () => {
      it('rejects a waiting acquisition at once with a typed error', async () => {
        const k = key();
        const holder = await locks.acquire(k);
        const { manager: closing, locks: waiterSide } = await anotherInstance();
        const waiter = settle(waiterSide.acquire(k, { waitTimeout: 10_000 }));
        await sleep(200);
        const closed = settle(closing.close());
        const outcome = await waiter;
        expect(outcome.error).toBeInstanceOf(DistributedLockError);
        expect(outcome.ms).toBeLessThan(200 + 3_000);
        expect((await closed).error).toBeUndefined();
        // The holder is unaffected, and the next one gets the lock right after its release.
        expect(holder.isHeld).toBe(true);
        await holder.release();
        const next = await contender.acquire(k, { waitTimeout: 5_000 });
        await next.release();
      }, 20_000);

      it('takes the lock from a section still running and tells its holder (LockLostError "closed"), never committing half of it', async () => {
        const k = key();
        const { manager: closing, locks: holderSide } = await anotherInstance();
        let closeDone: Promise<unknown> = Promise.resolve();
        const section = settle(
          holderSide.withLock(k, async (lock) => {
            closeDone = settle(closing.close());
            await sleep(300);
            return lock.signal.aborted ? 'told' : 'not told';
          }),
        );
        const outcome = await section;
        await closeDone;
        expect(outcome.error).toBeInstanceOf(LockLostError);
        expect((outcome.error as LockLostError).reason).toBe('closed');
        const next = await contender.tryAcquire(k);
        expect(next).not.toBeNull();
        await next?.release();
      });

      it('leaves the lock free when close() comes during a release', async () => {
        const k = key();
        const { manager: closing, locks: holderSide } = await anotherInstance();
        const lock = await holderSide.acquire(k);
        const releasing = lock.release();
        await closing.close();
        await releasing.catch(() => undefined);
        const next = await contender.tryAcquire(k);
        expect(next).not.toBeNull();
        await next?.release();
      });
    });

    describe('bounds are what the README says', () => {
      it('reports a wait shorter than a round trip on a healthy server as a timeout, not as an unavailable server', async () => {
        const k = key();
        const holder = await locks.acquire(k);
        for (const waitTimeout of [1, 2, 5]) {
          const ends = await Promise.all(Array.from({ length: 4 }, () => settle(contender.acquire(k, { waitTimeout }))));
          // The message names the error and its cause: a rare failure here must say where it came from.
          for (const end of ends) expect(end.error, describeFailure(end.error)).toBeInstanceOf(LockAcquireTimeoutError);
        }
        await holder.release();
      });

      it('stays usable after a storm of waits shorter than a round trip (nothing left holding the key)', async () => {
        const k = key();
        const stopAt = Date.now() + 1_000;
        let untyped = 0;
        await Promise.all(
          Array.from({ length: 12 }, async (_, i) => {
            while (Date.now() < stopAt) {
              const end = await settle((i % 2 ? locks : contender).withLock(k, () => sleep(1), { waitTimeout: 1 + (i % 5) * 8 }));
              if (end.error !== undefined && !(end.error instanceof DistributedLockError)) untyped += 1;
            }
          }),
        );
        expect(untyped).toBe(0);
        const after = await locks.acquire(k, { waitTimeout: 5_000 });
        await after.release();
      }, 20_000);

      it('ends a wait that was behind another of its instance at its own waitTimeout, not a whole one after its turn came', async () => {
        const k = key();
        const holder = await locks.acquire(k);
        const started = Date.now();
        // The first asks the backend (in its queue, where it keeps one); the second waits behind it in the
        // instance, and its turn comes when the first gives up at 600 ms.
        const [first, second] = await Promise.all([settle(contender.acquire(k, { waitTimeout: 600 })), settle(contender.acquire(k, { waitTimeout: 700 }))]);
        expect(first.error).toBeInstanceOf(DistributedLockError);
        expect(second.error).toBeInstanceOf(DistributedLockError);
        // The bound is the wait plus what a timer may be late on a loaded machine; the turn's 600 ms are not
        // given again (it ended near 1300 ms when they were).
        expect(Date.now() - started).toBeLessThan(700 + 400);
        await holder.release();
      }, 20_000);

      it('ends 100 waits with a 300 ms waitTimeout near 300 ms, however busy the backend is with them, and leaves no one in line', async () => {
        const k = key();
        const holder = await locks.acquire(k);
        // How long this process's loop stood still meanwhile: no deadline can fire while it does.
        const stood = monitorEventLoopDelay({ resolution: 10 });
        stood.enable();
        const ends = await Promise.all(
          Array.from({ length: 100 }, () => settle(contender.acquire(k, { waitTimeout: 300 }))),
        );
        stood.disable();
        for (const end of ends) expect(end.error).toBeInstanceOf(DistributedLockError);
        // The bound is the wait plus what a timer may be late on a loaded 2-core machine, not the
        // backend's time to let 100 contenders in and out of its queue. The loop's longest stand-still is
        // the client's work for 100 acquisitions at once under the whole suite's load (measured up to
        // 350 ms for etcd and 156 ms for ZooKeeper with 3 CPU hogs, and more in a full run): a cost the
        // benchmarks measure (issue 39), not a late deadline, so it is not charged to this bound.
        const maxEnd = Math.max(...ends.map((end) => end.ms));
        expect(maxEnd - stood.max / 1e6).toBeLessThan(300 + 700);
        await holder.release();
        const next = await locks.acquire(k, { waitTimeout: 5_000 });
        await next.release();
        // What the ended waits used (a pinned connection, a place in a local line) comes back: the same client
        // takes another key. (Seen: the PostgreSQL advisory strategy's connection slots were still busy with
        // the waits' cancellations, and the next test's tryAcquire of a free key answered null.)
        const elsewhere = await contender.acquire(key(), { waitTimeout: 5_000 });
        await elsewhere.release();
      }, 20_000);
    });

    describe('keys mean the same lock on every backend', () => {
      it('treats keys that differ by trailing spaces as different locks', async () => {
        const k = key();
        const plain = await locks.acquire(k);
        const spaced = await contender.tryAcquire(`${k} `);
        expect(spaced).not.toBeNull();
        await spaced?.release();
        await plain.release();
      });

      it('treats U+FFFD as an ordinary character, distinct from other keys', async () => {
        const k = key();
        const a = await locks.acquire(`${k}:\uFFFD`);
        const b = await contender.tryAcquire(`${k}:\uFFFE`);
        expect(b).not.toBeNull();
        await b?.release();
        await a.release();
      });

      it.each([['\uD800'], ['x\uDC00y'], ['\uDBFF']])('refuses a key with a lone surrogate (%p) before touching the server', async (bad) => {
        await expect(locks.acquire(`${key()}:${bad}`)).rejects.toBeInstanceOf(InvalidLockKeyError);
      });
    });
  });
}
