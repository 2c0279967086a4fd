import type { LeaseGrant, LockRequest, WaitBudget } from './lock-lease';
import { LockManager } from './lock-manager';
import { LockService } from './lock-service';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error';
import { InMemoryLockStrategy } from '../strategies/in-memory/in-memory-lock.strategy';

/**
 * A strategy whose queue wait ends early without the lock, as a queue entry does when the lease or session
 * it lived on expired while the process was frozen (etcd, ZooKeeper, Redis after a failover).
 */
class ForgetfulQueue extends InMemoryLockStrategy {
  earlyEnds = 0;
  /** How many of the next waits end early (set once the holder is in). */
  forgetTimes = 0;
  override acquire(request: LockRequest, budget: WaitBudget): Promise<LeaseGrant | null> {
    if (this.earlyEnds < this.forgetTimes) {
      this.earlyEnds += 1;
      return new Promise((resolve) => setTimeout(() => resolve(null), 20));
    }
    return super.acquire(request, budget);
  }
}

describe('LockManager: a strategy wait that ends early without the lock', () => {
  it('is not a timeout: the wait goes on for what is left of it, and gets the lock once it is free', async () => {
    const strategy = new ForgetfulQueue();
    const manager = new LockManager(strategy);
    const locks = new LockService(manager);
    try {
      const holder = await locks.acquire('k');
      strategy.forgetTimes = 3;
      setTimeout(() => void holder.release(), 150);
      const started = Date.now();
      const lock = await locks.acquire('k', { waitTimeout: 5_000 });
      expect(strategy.earlyEnds).toBe(3);
      expect(Date.now() - started).toBeLessThan(4_000);
      await lock.release();
    } finally {
      await manager.close();
    }
  });

  it('still ends at the waitTimeout when the strategy keeps ending early', async () => {
    const strategy = new ForgetfulQueue();
    const manager = new LockManager(strategy);
    const locks = new LockService(manager);
    try {
      const holder = await locks.acquire('k');
      strategy.forgetTimes = Number.POSITIVE_INFINITY;
      const started = Date.now();
      await expect(locks.acquire('k', { waitTimeout: 400 })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
      expect(Date.now() - started).toBeGreaterThanOrEqual(390);
      // Asked again at the retry policy's pace, not in a tight loop.
      expect(strategy.earlyEnds).toBeLessThan(20);
      await holder.release();
    } finally {
      await manager.close();
    }
  });
});
