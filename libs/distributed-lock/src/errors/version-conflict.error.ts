import { DistributedLockError } from './distributed-lock.error';

/**
 * An optimistic update found another version than the one it read: someone else wrote first.
 * `@OptimisticVersion` re-runs the method on this error.
 */
export class VersionConflictError extends DistributedLockError {
  constructor(
    /** Entity or table name. */
    readonly entity: string,
    /** The row's identifier, as given by the caller. */
    readonly id: unknown,
    readonly expectedVersion: unknown,
    /** The version found, when it is known (undefined when the row is gone). */
    readonly actualVersion?: unknown,
  ) {
    super(
      `Version conflict on ${entity} ${JSON.stringify(id)}: expected version ${String(expectedVersion)}` +
        `${actualVersion === undefined ? '' : `, found ${String(actualVersion)}`}. ` +
        'Re-read the row and retry (use @OptimisticVersion to retry automatically).',
    );
  }
}
