import type { LeaseGrant, LockRequest, WaitBudget } from './lock-lease';
import { LockManager } from './lock-manager';
import { LockService } from './lock-service';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error';
import { InMemoryLockStrategy } from '../strategies/in-memory/in-memory-lock.strategy';

/**
 * A queueing strategy that says when its server answered a wait: the first wait hears after 50 ms, the
 * ones after it `lateByMs` later: a burst of waits sent at once on one connection, the last ones heard long
 * after the first (as 100 etcd waits on a loaded machine are).
 */
class LateAnswers extends InMemoryLockStrategy {
  readonly signalsServerAnswer = true;
  /** How many waits heard from the server so far. */
  answered = 0;
  private waits = 0;
  constructor(private readonly lateByMs: number) {
    super();
  }
  override acquire(request: LockRequest, budget: WaitBudget): Promise<LeaseGrant | null> {
    const delay = this.waits === 0 ? 50 : this.lateByMs;
    this.waits += 1;
    return new Promise((resolve, reject) =>
      setTimeout(() => {
        this.answered += 1;
        budget.serverAnswered?.();
        super.acquire(request, budget).then(resolve, reject);
      }, delay),
    );
  }
}

/** A queueing strategy whose first wait hears at 10 ms and ends without the lock at 100 ms; its next wait hears 1,500 ms after it begins. */
class EndsEarlyThenLate extends InMemoryLockStrategy {
  readonly signalsServerAnswer = true;
  private waits = 0;
  override acquire(request: LockRequest, budget: WaitBudget): Promise<LeaseGrant | null> {
    this.waits += 1;
    if (this.waits === 1) {
      setTimeout(() => budget.serverAnswered?.(), 10);
      return new Promise((resolve) => setTimeout(() => resolve(null), 100));
    }
    return new Promise((resolve, reject) =>
      setTimeout(() => {
        budget.serverAnswered?.();
        super.acquire(request, budget).then(resolve, reject);
      }, 1_500),
    );
  }
}

describe('LockManager: a wait whose own first answer is late', () => {
  it('times out at its waitTimeout when the server answered another wait since it began', async () => {
    const strategy = new LateAnswers(1_500);
    const manager = new LockManager(strategy, { operationTimeout: 5_000 });
    const locks = new LockService(manager);
    try {
      const holder = await locks.tryAcquire('k');
      expect(holder).not.toBeNull();
      const started = Date.now();
      const waits = await Promise.allSettled(Array.from({ length: 3 }, () => locks.acquire('k', { waitTimeout: 300 })));
      const elapsed = Date.now() - started;
      for (const wait of waits) expect(wait.status === 'rejected' && wait.reason instanceof LockAcquireTimeoutError).toBe(true);
      // Far below the 1,500 ms it takes the late waits to hear from the server themselves.
      expect(elapsed).toBeLessThan(1_000);
      await holder?.release();
    } finally {
      await manager.close();
    }
  });

  it('times out at its deadline when the server answered it before the strategy ended its wait early and the engine asked again', async () => {
    // The strategy's first wait hears at 10 ms and ends without the lock at 100 ms (its place went, as after a
    // frozen process); the engine asks again, and that wait would hear only 1,500 ms later. The server
    // answered this caller's wait since it began: its deadline is a plain timeout.
    const strategy = new EndsEarlyThenLate();
    const manager = new LockManager(strategy, { operationTimeout: 5_000 });
    const locks = new LockService(manager);
    try {
      const holder = await locks.tryAcquire('k');
      const started = Date.now();
      await expect(locks.acquire('k', { waitTimeout: 300 })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
      expect(Date.now() - started).toBeLessThan(1_000);
      await holder?.release();
    } finally {
      await manager.close();
    }
  });

  it('still waits for an answer when no wait heard from the server since it began', async () => {
    const strategy = new LateAnswers(600);
    const manager = new LockManager(strategy, { operationTimeout: 5_000 });
    const locks = new LockService(manager);
    try {
      const holder = await locks.tryAcquire('k');
      // The first wait hears at 50 ms and ends before the second begins.
      await expect(locks.acquire('k', { waitTimeout: 60 })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
      await new Promise((resolve) => setTimeout(resolve, 20));
      const started = Date.now();
      const answeredBefore = strategy.answered;
      await expect(locks.acquire('k', { waitTimeout: 100 })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
      // Told apart from a silent server by its own answer (600 ms in), which came before the timeout: counted,
      // not timed, as a loaded machine runs timers late and in bursts.
      expect(strategy.answered).toBe(answeredBefore + 1);
      expect(Date.now() - started).toBeGreaterThanOrEqual(100);
      await holder?.release();
    } finally {
      await manager.close();
    }
  });
});
