import { DistributedLockError } from './distributed-lock.error';

/**
 * Two callers disagree on a semaphore's size: `permits` is part of its identity, and the semaphore, held or
 * waited for by others, has `actual` permits where this caller asked for `requested`. Thrown by the
 * acquisition before it takes or waits for anything; nothing is mixed.
 */
export class PermitsMismatchError extends DistributedLockError {
  constructor(
    /** The semaphore key, with its prefix. */
    readonly key: string,
    /** Name of the strategy that was asked. */
    readonly strategy: string,
    /** The size this caller asked for. */
    readonly requested: number,
    /** The size the semaphore has (the other callers'). */
    readonly actual: number,
    options?: { cause?: unknown },
  ) {
    super(
      `Semaphore "${key}" (strategy "${strategy}") has ${actual} permits, but this caller asked for ${requested}. ` +
        'Every caller of one semaphore must give the same `permits`: use one constant, or a new key for a new limit ' +
        '(the size is forgotten once nobody holds or waits for the semaphore).',
      options,
    );
  }
}
