import type { LockLostError } from '../errors/lock-lost.error';

/**
 * How a section under a lock or permit ends for its caller, once its hold is released. One rule for
 * `withLock`, `withPermit` and scheduled jobs: a hold lost at any point, noticed while the section ran or
 * only by its release, is reported as a rejection. The section's own value or failure travels on the loss.
 */

/** The hold's loss once known (during its section or by its release); for several keys, the first one lost. */
export function lossOf(hold: { throwIfLost(): void }): LockLostError | undefined {
  try {
    hold.throwIfLost();
    return undefined;
  } catch (error) {
    return error as LockLostError;
  }
}

/** A section that returned `value`: the value, or, had its hold been lost, the loss carrying the value. */
export function completedSection<T>(lost: LockLostError | undefined, value: T): T {
  if (lost) throw lost.withSectionResult(value);
  return value;
}

/**
 * The error a section that threw `error` ends in: the loss, with `error` as its cause, had its hold been
 * lost (the failure most likely came from it: a transaction rolled back, a connection gone); else `error`.
 */
export function failedSection(lost: LockLostError | undefined, error: unknown): unknown {
  return lost ? lost.withSectionFailure(error) : error;
}
