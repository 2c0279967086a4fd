import { LockAssertionError } from '../errors/lock-assertion.error';
import { currentLock } from './lock-context';
import type { LockHandle } from './lock-handle';

/**
 * Throws unless the running call chain holds a lock (or the lock on `key`, with or without the service's
 * prefix), for code that must only run under one, such as the body of a `@ScheduledLock` job or a helper
 * it calls. Returns that lock. A lock known lost throws its `LockLostError`; a lock already released, or
 * no lock at all, throws `LockAssertionError`. Reads the same async context as `currentLock()`, so work
 * started inside the section (awaited or in parallel) passes, and unrelated work never does.
 *
 * @example
 * function writeDailyReport() {
 *   assertLocked('ReportService.daily');   // never run by two instances at once
 * }
 */
export function assertLocked(key?: string): LockHandle {
  if (key !== undefined && typeof key !== 'string') throw new LockAssertionError(undefined, `the key to assert must be a string, got ${typeof key}.`);
  const lock = currentLock(key);
  if (!lock) {
    throw new LockAssertionError(
      key,
      'the running call chain holds no such lock. Call this code from inside a locked section (@ScheduledLock, @Locked, withLock), ' +
        'not from a timer or callback started elsewhere.',
    );
  }
  lock.throwIfLost();
  if (!lock.isHeld) throw new LockAssertionError(key, `the lock "${lock.key}" was already released: this code outlived the section that held it.`);
  return lock;
}
