import { DistributedLockError } from './distributed-lock.error';

/**
 * The release of a lock that is a transaction (`PessimisticLockStrategy`) is the COMMIT of the writes
 * made under it, and that COMMIT failed. `committed` says what became of the writes: `false` when they
 * were rolled back, `'unknown'` when the connection was lost or timed out during the COMMIT, so the
 * server may or may not have applied it. Thrown by `withLock` / `@Locked` instead of the section's result.
 */
export class LockCommitFailedError extends DistributedLockError {
  constructor(
    readonly key: string,
    readonly strategy: string,
    readonly committed: false | 'unknown',
    options?: { cause?: unknown },
  ) {
    super(
      committed === false
        ? `The writes made under lock "${key}" (strategy "${strategy}") were rolled back: the COMMIT that releases the lock failed. ` +
            'Nothing of the section was saved; it is safe to run it again.'
        : `The outcome of the writes made under lock "${key}" (strategy "${strategy}") is unknown: the connection was lost or timed out ` +
            'during the COMMIT that releases the lock. Check the data (for example by the fencing token you stored) before running the section again.',
      options,
    );
  }
}
