import { LockAssertionError } from '../errors/lock-assertion.error';
import { LockLostError } from '../errors/lock-lost.error';
import { InMemoryLockStrategy } from '../strategies/in-memory/in-memory-lock.strategy';
import { assertLocked } from './assert-locked';
import { LockManager } from './lock-manager';
import { LockService } from './lock-service';

describe('assertLocked', () => {
  const strategy = new InMemoryLockStrategy();
  const locks = new LockService(new LockManager(strategy), { keyPrefix: 'app:' });

  it('passes inside a locked section, with or without the prefix, also in work started inside it', async () => {
    await locks.withLock('report', async (lock) => {
      expect(assertLocked()).toBe(lock);
      expect(assertLocked('report').key).toBe('app:report');
      expect(assertLocked('app:report').key).toBe('app:report');
      await Promise.all([Promise.resolve().then(() => assertLocked('report'))]);
    });
  });

  it('throws LockAssertionError outside any section, for another key, and after the section ended', async () => {
    expect(() => assertLocked()).toThrow(LockAssertionError);
    let later: Promise<unknown> = Promise.resolve();
    await locks.withLock('report', async () => {
      expect(() => assertLocked('other')).toThrow(/the lock "other"/);
      later = new Promise((resolve) => setTimeout(resolve, 20)).then(() => assertLocked('report'));
    });
    await expect(later).rejects.toThrow(/already released/);
  });

  it('throws the LockLostError of a lock known lost', async () => {
    await expect(
      locks.withLock('lost', async () => {
        strategy.forceRelease('app:lost');
        expect(() => assertLocked('lost')).toThrow(LockLostError);
      }),
    ).rejects.toBeInstanceOf(LockLostError);
  });
});
