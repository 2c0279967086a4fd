import { DistributedLockError } from './distributed-lock.error';

/**
 * Code that must only run under a lock ran without it: `assertLocked()` found no lock held by the running
 * call chain (or not the one named), or a `@ScheduledLock` method was called before
 * `DistributedLockModule` had wrapped it.
 */
export class LockAssertionError extends DistributedLockError {
  constructor(
    /** The key that was asserted, without the service's prefix; undefined when any lock would do. */
    readonly key: string | undefined,
    /** What was found instead and what to do. */
    readonly problem: string,
  ) {
    super(`Expected to run under ${key === undefined ? 'a lock' : `the lock "${key}"`}: ${problem}`);
  }
}
