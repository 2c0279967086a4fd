import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { assertKnownKeys, describe, LOCK_DEFAULTS, validateAcquireOptions, type AcquireOptions } from './lock-options';

/**
 * Options of one permit acquisition (`LockService.acquirePermit`, `withPermit`, `@Limited`): the
 * semaphore's size, the places to take, and the options of a lock acquisition (lease, watchdog, wait,
 * retry, signal), with the same defaults. Permits are never re-entered: every acquisition takes places of its own.
 */
export interface PermitOptions extends Omit<AcquireOptions, 'mode' | 'reentrant'> {
  /**
   * The semaphore's size: at most this many places are held at once. Required, a whole number from 1 to
   * `LOCK_DEFAULTS.maxPermits` (1 000 000). Part of the semaphore's identity: while anyone holds or waits
   * for the semaphore, a caller that gives another size is refused with `PermitsMismatchError`.
   */
  readonly permits: number;
  /** How many of the places this acquisition takes, a whole number from 1 to `permits`. Default 1. */
  readonly weight?: number;
}

/** Permit options checked, without the acquisition defaults applied. */
export interface CheckedPermitOptions {
  readonly permits: number;
  readonly weight: number;
  readonly acquire: AcquireOptions;
}

const PERMIT_ONLY_KEYS = ['permits', 'weight'];
const PERMIT_KEYS = ['ttl', 'autoExtend', 'waitTimeout', 'retry', 'signal', ...PERMIT_ONLY_KEYS];

/** A whole number from `min` to `max`, or `InvalidLockOptionsError` naming `path`. */
function assertCount(value: unknown, path: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidLockOptionsError(path, `expected a whole number from ${min} to ${max}, got ${describe(value)}.`);
  }
  return value;
}

/**
 * Validates permit options (before any server is touched): `permits` a whole number from 1 to
 * `LOCK_DEFAULTS.maxPermits`, `weight` one from 1 to `permits`, the rest as acquisition options. `mode`
 * and `reentrant` are refused: a permit is always one of several holds, and never re-entered.
 */
export function validatePermitOptions(input: unknown, path = 'options'): CheckedPermitOptions {
  if (input === undefined) throw new InvalidLockOptionsError(`${path}.permits`, 'a semaphore needs its size: pass { permits: N }.');
  assertKnownKeys(input, PERMIT_KEYS, path);
  const permits = assertCount(input.permits, `${path}.permits`, 1, LOCK_DEFAULTS.maxPermits);
  const weight = input.weight === undefined ? LOCK_DEFAULTS.weight : assertCount(input.weight, `${path}.weight`, 1, LOCK_DEFAULTS.maxPermits);
  if (weight > permits) {
    throw new InvalidLockOptionsError(`${path}.weight`, `must be at most permits (${permits}), got ${weight}: such a permit could never be granted.`);
  }
  const rest: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(input)) if (!PERMIT_ONLY_KEYS.includes(name)) rest[name] = value;
  return { permits, weight, acquire: validateAcquireOptions(rest, path) };
}
