import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import type { LeaseGrant } from './lock-lease';
import { LockManager } from './lock-manager';
import { LockService } from './lock-service';
import { InMemoryLockStrategy } from '../strategies/in-memory/in-memory-lock.strategy';

/** A store that cannot be reached for its first `failures` releases (a failover under way), then can. */
class AwayForReleases extends InMemoryLockStrategy {
  releases = 0;
  constructor(private failures: number) {
    super();
  }
  override release(lease: LeaseGrant): Promise<boolean> {
    this.releases += 1;
    if (this.failures > 0) {
      this.failures -= 1;
      return Promise.reject(new LockBackendUnavailableError(this.name, 'release', 1, { cause: new Error('connection closed') }));
    }
    return super.release(lease);
  }
}

describe('LockManager: a release that could not reach the backend', () => {
  it('is tried again in the background, so the lock is free long before its lease ends; the caller still hears the failure', async () => {
    const strategy = new AwayForReleases(2);
    const manager = new LockManager(strategy, { operationTimeout: 1_000 });
    const locks = new LockService(manager);
    try {
      const lock = await locks.acquire('k', { ttl: 30_000 });
      await expect(lock.release()).rejects.toBeInstanceOf(LockBackendUnavailableError);
      const started = Date.now();
      // Free after two retries (100 and 200 ms later), not after the 30 s lease.
      const next = await locks.acquire('k', { waitTimeout: 5_000 });
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(strategy.releases).toBe(3);
      await next.release();
    } finally {
      await manager.close();
    }
  });

  it('is not waited for by close() while a retry is on its way, nor tried again after it', async () => {
    // The first release fails; the retry (100 ms later) never answers, as a server still away.
    class AwayThenSilent extends InMemoryLockStrategy {
      releases = 0;
      override release(): Promise<boolean> {
        this.releases += 1;
        if (this.releases === 1) return Promise.reject(new LockBackendUnavailableError(this.name, 'release', 1));
        return new Promise<boolean>(() => undefined);
      }
    }
    const strategy = new AwayThenSilent();
    const manager = new LockManager(strategy, { operationTimeout: 1_000 });
    const lock = await new LockService(manager).acquire('k', { ttl: 30_000 });
    await expect(lock.release()).rejects.toBeInstanceOf(LockBackendUnavailableError);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(strategy.releases).toBe(2);
    const started = Date.now();
    await manager.close();
    expect(Date.now() - started).toBeLessThan(200);
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    expect(strategy.releases).toBe(2);
  });

  it('goes on until the end a renewal still on its way may have given the lease, not the lease end known before it', async () => {
    // On a fake clock (the manager's deadlines read setTimeout and Date.now), so that the steps below are exact.
    vi.useFakeTimers();
    let awayUntil = 0;
    // Renewals answer after 60 ms; releases fail while the store is away.
    class SlowRenewals extends InMemoryLockStrategy {
      override async extend(lease: LeaseGrant, ttlMs: number): Promise<LeaseGrant | null> {
        await new Promise((resolve) => setTimeout(resolve, 60));
        return super.extend(lease, ttlMs);
      }
      override release(lease: LeaseGrant): Promise<boolean> {
        if (Date.now() < awayUntil) return Promise.reject(new LockBackendUnavailableError(this.name, 'release', 1));
        return super.release(lease);
      }
    }
    const strategy = new SlowRenewals();
    const manager = new LockManager(strategy, { operationTimeout: 1_000 });
    try {
      const started = Date.now();
      // Renewed at 400 ms (to 1 600 ms), released at 420 ms while that renewal is on its way: the lease end
      // known then is 1 200 ms. The store is away until 1 250 ms.
      const lock = await new LockService(manager).acquire('k', { ttl: 1_200, autoExtend: true });
      await vi.advanceTimersByTimeAsync(420);
      awayUntil = started + 1_250;
      await expect(lock.release()).rejects.toBeInstanceOf(LockBackendUnavailableError);
      await vi.advanceTimersByTimeAsync(1_500 - (Date.now() - started));
      // Released by a retry between 1 250 and 1 500 ms, not left to the renewed lease's end at 1 600 ms.
      expect(await strategy.tryAcquire({ key: 'k', owner: 'next', ttlMs: 1_000, mode: 'exclusive' })).not.toBeNull();
    } finally {
      vi.useRealTimers();
      await manager.close();
    }
  });

  it('is not tried again once the manager closes', async () => {
    const strategy = new AwayForReleases(1);
    const manager = new LockManager(strategy, { operationTimeout: 1_000 });
    const locks = new LockService(manager);
    const lock = await locks.acquire('k', { ttl: 30_000 });
    await expect(lock.release()).rejects.toBeInstanceOf(LockBackendUnavailableError);
    const started = Date.now();
    await manager.close();
    // close() does not wait for a retry, and none runs after it.
    expect(Date.now() - started).toBeLessThan(100);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(strategy.releases).toBe(1);
  });

  it('is not tried again when the lease would end before the retry', async () => {
    const strategy = new AwayForReleases(1);
    const manager = new LockManager(strategy, { operationTimeout: 1_000 });
    const locks = new LockService(manager);
    try {
      const lock = await locks.acquire('k', { ttl: 80, autoExtend: false });
      await expect(lock.release()).rejects.toBeInstanceOf(LockBackendUnavailableError);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(strategy.releases).toBe(1);
    } finally {
      await manager.close();
    }
  });
});
