import { createHook } from 'node:async_hooks';
import type { LeaseGrant, LockRequest, WaitBudget } from './lock-lease';
import { LockManager } from './lock-manager';
import { LockService } from './lock-service';
import type { LockStrategy, LockStrategyCapabilities } from './lock-strategy.interface';

/** A strategy that answers at once, counting the promises it makes itself (one per call). */
class InstantStrategy implements LockStrategy {
  readonly name = 'instant';
  readonly capabilities: LockStrategyCapabilities = Object.freeze({ fencing: true, fifo: true, sharedLocks: false, crossProcess: true });
  calls = 0;
  private token = 0;
  readonly acquire?: (request: LockRequest, budget: WaitBudget) => Promise<LeaseGrant | null>;

  constructor(queue: boolean) {
    if (queue) this.acquire = (request) => this.tryAcquire(request);
  }

  tryAcquire(request: LockRequest): Promise<LeaseGrant | null> {
    this.calls += 1;
    this.token += 1;
    return Promise.resolve({ key: request.key, owner: request.owner, mode: request.mode, fencingToken: this.token, expiresAt: Date.now() + request.ttlMs });
  }

  extend(lease: LeaseGrant, ttlMs: number): Promise<LeaseGrant | null> {
    this.calls += 1;
    return Promise.resolve({ ...lease, expiresAt: Date.now() + ttlMs });
  }

  release(): Promise<boolean> {
    this.calls += 1;
    return Promise.resolve(true);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

const LIBRARY_FRAME = /[\\/]libs[\\/]distributed-lock[\\/]src[\\/](?!.*\.spec\.ts)/;

/**
 * Promises and runtime timers the library makes while `run`'s promise settles, less the strategy's own (one
 * per call). Only what a frame of the library made is counted: the test runner makes promises of its own
 * meanwhile.
 */
function engineCost(strategy: InstantStrategy, run: () => Promise<unknown>): Promise<{ promises: number; timers: number }> {
  let promises = 0;
  let timers = 0;
  const limit = Error.stackTraceLimit;
  const hook = createHook({
    init(_id, type) {
      if (type !== 'PROMISE' && type !== 'Timeout') return;
      Error.stackTraceLimit = 50;
      const stack = new Error().stack ?? '';
      Error.stackTraceLimit = limit;
      if (!LIBRARY_FRAME.test(stack)) return;
      if (type === 'PROMISE') promises += 1;
      else timers += 1;
    },
  });
  const callsBefore = strategy.calls;
  hook.enable();
  return run().then(
    () => {
      hook.disable();
      return { promises: promises - (strategy.calls - callsBefore), timers };
    },
    (error: unknown) => {
      hook.disable();
      throw error;
    },
  );
}

/**
 * What the engine itself costs one uncontended section, against a strategy that answers at once: at most 8
 * promises (the target) and no timer of its own (every bound, deadline and renewal is a deadline on the manager's clock,
 * whose one timer is armed already). Pinned here so that a change cannot add layers unnoticed
 * (docs/benchmarks.md, "The engine's own work").
 */
describe('the engine\'s own work per uncontended section', () => {
  for (const queue of [true, false]) {
    describe(queue ? 'a strategy with its own queue' : 'a strategy that is polled', () => {
      let strategy: InstantStrategy;
      let manager: LockManager;
      let locks: LockService;

      beforeEach(async () => {
        strategy = new InstantStrategy(queue);
        manager = new LockManager(strategy);
        locks = new LockService(manager);
        // Warm: the clock's timer is armed, every path compiled.
        for (let i = 0; i < 20; i += 1) await locks.withLock('warm', () => undefined);
      });
      afterEach(() => manager.close());

      it('acquire + release', async () => {
        const cost = await engineCost(strategy, () => locks.acquire('k').then((lock) => lock.release()));
        // The acquisition's promise and its answer's `then`; the release's the same.
        expect(cost).toEqual({ promises: 4, timers: 0 });
      });

      it('tryAcquire + release', async () => {
        const cost = await engineCost(strategy, () => locks.tryAcquire('k').then((lock) => lock?.release()));
        expect(cost).toEqual({ promises: 4, timers: 0 });
      });

      it('withLock around a synchronous section', async () => {
        const cost = await engineCost(strategy, () => locks.withLock('k', () => 1));
        // Acquire and release as above, the section's step after the acquisition and the one after the release.
        expect(cost).toEqual({ promises: 6, timers: 0 });
      });

      it('withLock around an async section', async () => {
        const cost = await engineCost(strategy, () => locks.withLock('k', async () => 1));
        // As above, with the section's own promise and the step that waits for it.
        expect(cost).toEqual({ promises: 8, timers: 0 });
      });
    });
  }
});
