import { DistributedLockError } from '../errors/distributed-lock.error';
import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import { LockCommitFailedError } from '../errors/lock-commit-failed.error';
import { PermitsMismatchError } from '../errors/permits-mismatch.error';
import { LockPermissionDeniedError } from '../errors/lock-permission-denied.error';

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
  const started = performance.now();
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(() => {
      settled = true;
      reject(new LockBackendUnavailableError(op.strategy, op.operation, Math.round(performance.now() - started), { key: op.key }));
    }, op.timeoutMs);
    timer.unref?.();
    let pending: Promise<T>;
    try {
      pending = op.run();
    } catch (error) {
      pending = Promise.reject(error);
    }
    pending.then(
      (value) => {
        if (settled) {
          op.onLateResult?.(value);
          return;
        }
        settled = true;
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(
          error instanceof DistributedLockError
            ? underRegisteredName(error, op.strategy)
            : new LockBackendUnavailableError(op.strategy, op.operation, Math.round(performance.now() - started), { key: op.key, cause: error }),
        );
      },
    );
  });
}

/**
 * A strategy names itself by its kind ("database"); the caller knows it by the name the application
 * registered it under ("orders"), and that is the name an error must carry to be found in the logs.
 */
export function underRegisteredName(error: DistributedLockError, name: string): DistributedLockError {
  if (error instanceof LockBackendUnavailableError && error.strategy !== name) {
    return new LockBackendUnavailableError(name, error.operation, error.elapsedMs, { key: error.key, cause: error.cause });
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
  return error;
}
