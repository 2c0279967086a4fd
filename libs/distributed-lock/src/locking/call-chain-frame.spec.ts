import { currentLock } from './lock-context';
import { LockManager } from './lock-manager';
import { LockService } from './lock-service';
import { InMemoryLockStrategy } from '../strategies/in-memory/in-memory-lock.strategy';

describe('the call-chain frame of a section', () => {
  let manager: LockManager;
  let locks: LockService;
  beforeEach(() => {
    manager = new LockManager(new InMemoryLockStrategy());
    locks = new LockService(manager, { keyPrefix: 'shop:' });
  });
  afterEach(() => manager.close());

  it('is made for a re-entrant section (the default): nested calls re-enter, currentLock() finds the lock', async () => {
    await locks.withLock('k', async (outer) => {
      expect(currentLock('k')).toBe(outer);
      await locks.withLock('k', (inner) => expect((inner as { reentered?: boolean }).reentered).toBe(true));
    });
  });

  it('is not made with reentrant: false: no re-entry, and currentLock() finds nothing there', async () => {
    const noFrame = new LockService(manager, { keyPrefix: 'shop:', defaults: { reentrant: false } });
    await noFrame.withLock('k', async () => {
      expect(currentLock('k')).toBeUndefined();
      expect(currentLock()).toBeUndefined();
      // A nested call waits for the lock like any other caller.
      await expect(noFrame.withLock('k', () => undefined, { waitTimeout: 30 })).rejects.toThrow(/within/);
    });
  });
});
