import { LockLostError } from '../errors/lock-lost.error';
import { InMemoryLockStrategy } from '../strategies/in-memory/in-memory-lock.strategy';
import type { LeaseGrant } from './lock-lease';
import { LockManager } from './lock-manager';
import { LockService } from './lock-service';
import type { LeaseLostListener, LockStrategy } from './lock-strategy.interface';

/**
 * A strategy that knows, with no server call, when a lease is gone (as ZooKeeper knows a session the server
 * may have expired while the process was frozen) and says so only when asked: no timer of its own tells.
 */
function knowingStrategy(): LockStrategy & { gone: Set<string>; asked: number } {
  const server = new InMemoryLockStrategy();
  const listeners = new Map<string, Set<LeaseLostListener>>();
  const strategy = {
    name: 'knowing',
    capabilities: server.capabilities,
    gone: new Set<string>(),
    asked: 0,
    tryAcquire: (request: Parameters<LockStrategy['tryAcquire']>[0]) => server.tryAcquire(request),
    extend: (lease: LeaseGrant, ttl: number) => server.extend(lease, ttl),
    release: async (lease: LeaseGrant) => !strategy.gone.has(lease.owner) && server.release(lease),
    onLeaseLost: (lease: LeaseGrant, listener: LeaseLostListener) => {
      const set = listeners.get(lease.owner) ?? new Set();
      listeners.set(lease.owner, set);
      set.add(listener);
      return () => set.delete(listener);
    },
    checkLease: (lease: LeaseGrant) => {
      strategy.asked += 1;
      if (strategy.gone.has(lease.owner)) for (const listener of [...(listeners.get(lease.owner) ?? [])]) listener('session-ended');
    },
    close: () => server.close(),
  };
  return strategy;
}

describe('LockStrategy.checkLease: a loss the strategy knows of is read at once', () => {
  it.each(['isHeld', 'signal', 'throwIfLost'] as const)('reports it when the holder reads %s, before any timer runs; the release resolves false', async (read) => {
    const strategy = knowingStrategy();
    const manager = new LockManager(strategy);
    try {
      const lock = await new LockService(manager).acquire('k', { ttl: 60_000 });
      expect(lock.isHeld).toBe(true);
      strategy.gone.add(lock.owner);
      if (read === 'isHeld') expect(lock.isHeld).toBe(false);
      if (read === 'signal') expect(lock.signal.aborted).toBe(true);
      if (read === 'throwIfLost') expect(() => lock.throwIfLost()).toThrow(LockLostError);
      expect(lock.signal.reason).toBeInstanceOf(LockLostError);
      expect((lock.signal.reason as LockLostError).reason).toBe('session-ended');
      expect(await lock.release()).toBe(false);
    } finally {
      await manager.close();
    }
  });

  it('asks nothing once the lock is released', async () => {
    const strategy = knowingStrategy();
    const manager = new LockManager(strategy);
    try {
      const lock = await new LockService(manager).acquire('k', { ttl: 60_000 });
      await lock.release();
      const asked = strategy.asked;
      expect(lock.isHeld).toBe(false);
      expect(lock.signal.aborted).toBe(false);
      expect(strategy.asked).toBe(asked);
    } finally {
      await manager.close();
    }
  });
});
