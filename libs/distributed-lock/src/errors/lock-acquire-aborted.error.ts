import { DistributedLockError } from './distributed-lock.error';

/** The caller's `AbortSignal` cancelled a waiting acquisition; its place in any queue was given up. */
export class LockAcquireAbortedError extends DistributedLockError {
  constructor(
    readonly key: string,
    readonly strategy: string,
    /** How long the caller waited before the abort, in ms. */
    readonly waitedMs: number,
    options?: { cause?: unknown },
  ) {
    super(`Acquisition of lock "${key}" (strategy "${strategy}") was aborted by the caller after ${waitedMs} ms.`, options);
  }
}
