import { DistributedLockError } from './distributed-lock.error';

/** `extend()` was called on a lock that this owner no longer holds (released, expired or taken over). */
export class LockNotHeldError extends DistributedLockError {
  constructor(
    readonly key: string,
    readonly strategy: string,
    options?: { cause?: unknown },
  ) {
    super(
      `Lock "${key}" (strategy "${strategy}") is not held by this owner: it was released, expired, or taken over. ` +
        'Acquire it again before extending.',
      options,
    );
  }
}
