import { DistributedLockError } from './distributed-lock.error';

/** The lock was still held by someone else when `waitTimeout` ran out. */
export class LockAcquireTimeoutError extends DistributedLockError {
  constructor(
    /** The lock key, with its prefix. */
    readonly key: string,
    /** Name of the strategy that was asked. */
    readonly strategy: string,
    /** How long the caller waited, in ms. */
    readonly waitedMs: number,
    options?: { cause?: unknown },
  ) {
    super(
      `Could not acquire lock "${key}" (strategy "${strategy}") within ${waitedMs} ms: it is held by another owner. ` +
        'Raise `waitTimeout`, shorten the critical section, or use `tryAcquire` to skip busy work.',
      options,
    );
  }
}
