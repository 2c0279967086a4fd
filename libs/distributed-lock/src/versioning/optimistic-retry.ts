import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { VersionConflictError } from '../errors/version-conflict.error';
import { abortableDelay } from '../locking/abortable-delay';
import { assertKnownKeys, describe } from '../locking/lock-options';
import type { RetryOptions } from '../locking/lock-options';
import { retryDelay } from '../locking/retry-policy';

/** How optimistic work is re-run after a version conflict. */
export interface OptimisticRetryOptions {
  /** Re-runs after the first attempt; 0 means no retry. Default 5. */
  readonly retries?: number;
  /** Backoff between attempts. Default: 5 ms doubling up to 200 ms, half of it random. */
  readonly backoff?: RetryOptions;
  /** Called on each conflict that will be retried (attempt starts at 1), e.g. to count conflicts. */
  readonly onConflict?: (error: VersionConflictError, attempt: number) => void;
}

/** Defaults of the optimistic retry engine. */
export const OPTIMISTIC_RETRY_DEFAULTS = Object.freeze({
  retries: 5,
  backoff: Object.freeze({ initialDelay: 5, maxDelay: 200, factor: 2, jitter: 0.5 }),
});

/** Validates optimistic retry options; throws `InvalidLockOptionsError` naming the bad field. */
export function validateOptimisticRetryOptions(input: unknown, path = 'optimistic'): OptimisticRetryOptions {
  if (input === undefined) return {};
  assertKnownKeys(input, ['retries', 'backoff', 'onConflict'], path);
  if (input.retries !== undefined && (typeof input.retries !== 'number' || !Number.isInteger(input.retries) || input.retries < 0 || input.retries > 1000)) {
    throw new InvalidLockOptionsError(`${path}.retries`, `expected a whole number from 0 to 1000, got ${describe(input.retries)}.`);
  }
  if (input.onConflict !== undefined && typeof input.onConflict !== 'function') {
    throw new InvalidLockOptionsError(`${path}.onConflict`, `expected a function, got ${describe(input.onConflict)}.`);
  }
  if (input.backoff !== undefined) assertKnownKeys(input.backoff, ['initialDelay', 'maxDelay', 'factor', 'jitter'], `${path}.backoff`);
  return input as OptimisticRetryOptions;
}

/**
 * Runs `work`, and re-runs it from the start while it throws `VersionConflictError`, up to `retries`
 * times with jittered backoff; then the last conflict is thrown. Other errors pass through at once.
 * `work` must re-read what it updates on every attempt, or the retry only repeats the conflict.
 */
export async function runWithOptimisticRetry<T>(work: (attempt: number) => T | Promise<T>, options: OptimisticRetryOptions = {}): Promise<T> {
  const checked = validateOptimisticRetryOptions(options);
  const retries = checked.retries ?? OPTIMISTIC_RETRY_DEFAULTS.retries;
  const backoff = { ...OPTIMISTIC_RETRY_DEFAULTS.backoff, ...checked.backoff };
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await work(attempt);
    } catch (error) {
      if (!(error instanceof VersionConflictError) || attempt >= retries) throw error;
      checked.onConflict?.(error, attempt + 1);
      await abortableDelay(retryDelay(attempt, backoff));
    }
  }
}
