import type { DistributedLockError } from '../errors/distributed-lock.error';
import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import { LockCommitFailedError } from '../errors/lock-commit-failed.error';
import { PermitsMismatchError } from '../errors/permits-mismatch.error';
import { DeadlineClock } from './deadline-clock';
import { boundedCall } from './waits/bounded-call';
import { LockPermissionDeniedError } from '../errors/lock-permission-denied.error';
import { LockTableMismatchError } from '../errors/lock-table-mismatch.error';
import { LockTableMissingError } from '../errors/lock-table-missing.error';

/** Describes one strategy call for `runBounded`. */
export interface BoundedOperation<T> {
  readonly strategy: string;
  readonly operation: string;
  readonly key?: string;
  readonly timeoutMs: number;
  readonly run: () => Promise<T>;
  /** Called with a result that arrives after the caller gave up (e.g. a grant to release). */
  readonly onLateResult?: (value: T) => void;
}

/**
 * Runs a strategy call with a hard time bound: a server that is down or silent yields
 * `LockBackendUnavailableError` after `timeoutMs` instead of a hang. Errors that are not already this
 * library's are wrapped the same way, keeping the driver error as `cause`.
 */
export function runBounded<T>(op: BoundedOperation<T>): Promise<T> {
  // Outside a lock manager (health checks, warm-up): a clock of its own, one deadline, never keeping the
  // process alive; the bound and the wrapping are boundedCall's.
  return boundedCall<T, T>({ clock: new DeadlineClock(), strategy: op.strategy, operation: op.operation, key: op.key, timeoutMs: op.timeoutMs, run: op.run, onLateResult: op.onLateResult });
}

/**
 * A strategy names itself by its kind ("database"); the caller knows it by the name the application
 * registered it under ("orders"), and that is the name an error must carry to be found in the logs.
 */
export function underRegisteredName(error: DistributedLockError, name: string): DistributedLockError {
  if (error instanceof LockBackendUnavailableError && error.strategy !== name) {
    return new LockBackendUnavailableError(name, error.operation, error.elapsedMs, { key: error.key, cause: error.cause, hint: error.hint });
  }
  if (error instanceof LockCommitFailedError && error.strategy !== name) {
    return new LockCommitFailedError(error.key, name, error.committed, { cause: error.cause });
  }
  if (error instanceof PermitsMismatchError && error.strategy !== name) {
    return new PermitsMismatchError(error.key, name, error.requested, error.actual, { cause: error.cause });
  }
  if (error instanceof LockPermissionDeniedError && error.strategy !== name) {
    return new LockPermissionDeniedError(name, error.operation, error.grant, { key: error.key, cause: error.cause });
  }
  if (error instanceof LockTableMissingError && error.strategy !== name) {
    return new LockTableMissingError(name, error.operation, error.table, { key: error.key, cause: error.cause });
  }
  if (error instanceof LockTableMismatchError && error.strategy !== name) {
    return new LockTableMismatchError(name, error.operation, error.column, error.tables, { key: error.key, cause: error.cause });
  }
  return error;
}
