import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { assertDuration, assertKnownKeys, describe } from './lock-options';

/**
 * How far a lock may be passed between contenders of one process before it goes back to the backend,
 * so that other processes get their turn.
 */
export interface HandOverLimits {
  /** Most hand-overs in a row within the process. */
  readonly passes: number;
  /** Hand-overs stop this long (ms) after the lock was taken from the backend. */
  readonly windowMs: number;
}

/** The `localHandover` option of a strategy: limits, or `false` for none. */
export type LocalHandOverOption = false | { readonly passes?: number; readonly windowMs?: number };

/** The default limits: 64 passes within 50 ms. */
export const DEFAULT_HAND_OVER_LIMITS: HandOverLimits = Object.freeze({ passes: 64, windowMs: 50 });

/** Validates a `localHandover` option; `false` allows no hand-over. */
export function handOverLimits(option: LocalHandOverOption | undefined): HandOverLimits {
  if (option === false) return { passes: 0, windowMs: 0 };
  // Only a missing option or limit takes the default: null is refused like any other wrong value.
  const raw: unknown = option === undefined ? {} : option;
  assertKnownKeys(raw, ['passes', 'windowMs'], 'localHandover');
  const passes = raw.passes === undefined ? DEFAULT_HAND_OVER_LIMITS.passes : raw.passes;
  if (typeof passes !== 'number' || !Number.isInteger(passes) || passes < 0) {
    throw new InvalidLockOptionsError('localHandover.passes', `expected a whole number ≥ 0, got ${describe(passes)}.`);
  }
  return { passes, windowMs: assertDuration(raw.windowMs === undefined ? DEFAULT_HAND_OVER_LIMITS.windowMs : raw.windowMs, 'localHandover.windowMs', 0) };
}
