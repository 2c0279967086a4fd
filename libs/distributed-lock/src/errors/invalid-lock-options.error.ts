import { DistributedLockError } from './distributed-lock.error';

/** An option, a key or a module configuration is malformed. Thrown before any server is touched. */
export class InvalidLockOptionsError extends DistributedLockError {
  constructor(
    /** Path of the offending option, e.g. "ttl", "strategies.redis", "key". */
    readonly option: string,
    /** What is wrong and what to do instead. */
    readonly problem: string,
    options?: { cause?: unknown },
  ) {
    super(`Invalid lock option "${option}": ${problem}`, options);
  }
}
