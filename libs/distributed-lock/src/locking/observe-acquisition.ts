import { LockAcquireAbortedError } from '../errors/lock-acquire-aborted.error';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error';
import type { HeldLock } from './held-lock';
import type { LockHandle } from './lock-handle';
import type { AcquisitionObservation, AcquisitionOutcome, HoldObservation } from './lock-observer';

/** The outcome an acquisition that threw `error` had. */
export function outcomeOfFailure(error: unknown): AcquisitionOutcome {
  if (error instanceof LockAcquireTimeoutError) return 'timeout';
  if (error instanceof LockAcquireAbortedError) return 'aborted';
  return 'error';
}

/**
 * Tells `observation` how an acquisition that started at `startedAt` (`performance.now()`) ended; a granted
 * lock's hold observation goes into `holds`, where the manager finds it when the lock ends. What the caller
 * receives is unchanged.
 */
export function observeAcquisition<H extends LockHandle>(
  observation: AcquisitionObservation,
  acquiring: Promise<H | null>,
  startedAt: number,
  holds: Map<HeldLock, HoldObservation>,
): Promise<H | null> {
  // One derived promise rather than an async function's own: this runs on every observed acquisition.
  return acquiring.then(
    (handle) => {
      if (!handle) {
        observation.waitEnded('timeout', performance.now() - startedAt, undefined, undefined);
        return null;
      }
      const hold = observation.waitEnded('acquired', performance.now() - startedAt, handle.grant, undefined);
      if (hold) holds.set(handle.heldLock, hold);
      return handle;
    },
    (error: unknown) => {
      observation.waitEnded(outcomeOfFailure(error), performance.now() - startedAt, undefined, error);
      throw error;
    },
  );
}
