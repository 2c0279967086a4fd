import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import type { LockMode } from './lock-lease';

/** Backoff between attempts for strategies that must poll (and as a safety net for notified ones). */
export interface RetryOptions {
  /** First delay in ms. Default 10. */
  readonly initialDelay?: number;
  /** Upper bound of one delay in ms. Default 500. */
  readonly maxDelay?: number;
  /** Growth per attempt. Default 2. */
  readonly factor?: number;
  /** Share of each delay that is randomised, 0..1, so contenders do not retry in step. Default 0.5. */
  readonly jitter?: number;
}

/** Options of one acquisition. Every field is optional; defaults come from the module, then from `LOCK_DEFAULTS`. */
export interface AcquireOptions {
  /**
   * Lease length in ms: the lock frees itself this long after the last extension if the holder dies.
   * Default 30 000. When you do not set it, a watchdog extends the lease while you hold it.
   */
  readonly ttl?: number;
  /** Keep extending the lease at a third of `ttl` while held. Default: true when `ttl` is not given, else false. */
  readonly autoExtend?: boolean;
  /** How long to wait for a held lock, in ms; 0 tries once. Default 10 000. */
  readonly waitTimeout?: number;
  /** Backoff for polling strategies. */
  readonly retry?: RetryOptions;
  /** Cancels a waiting acquisition (and frees its place in a queue). */
  readonly signal?: AbortSignal;
  /** A nested acquisition of a key already held in the same async call chain re-enters. Default true. */
  readonly reentrant?: boolean;
  /** `shared` for readers of a read-write lock (strategies with `sharedLocks`). Default `exclusive`. */
  readonly mode?: LockMode;
}

/** Defaults a module or a lock service applies to every acquisition (everything but the signal). */
export type LockDefaults = Omit<AcquireOptions, 'signal'>;

/** The library's defaults, in one place. Durations in ms. */
export const LOCK_DEFAULTS = Object.freeze({
  ttl: 30_000,
  waitTimeout: 10_000,
  operationTimeout: 5_000,
  /** The watchdog extends at this fraction of the lease. */
  extendFraction: 1 / 3,
  reentrant: true,
  mode: 'exclusive' as LockMode,
  keyPrefix: '',
  maxKeyLength: 512,
  /** Places a permit takes of its semaphore (`PermitOptions.weight`). */
  weight: 1,
  /** The largest semaphore (`PermitOptions.permits`). */
  maxPermits: 1_000_000,
  retry: Object.freeze({ initialDelay: 10, maxDelay: 500, factor: 2, jitter: 0.5 }),
});

/** setTimeout's largest delay: longer durations would fire at once. */
export const MAX_DURATION_MS = 2_147_483_647;

/** Acquisition options with every default applied. */
export interface ResolvedAcquireOptions {
  readonly ttl: number;
  readonly autoExtend: boolean;
  readonly waitTimeout: number;
  readonly retry: Required<RetryOptions>;
  readonly signal: AbortSignal | undefined;
  readonly reentrant: boolean;
  readonly mode: LockMode;
}

const ACQUIRE_KEYS = ['ttl', 'autoExtend', 'waitTimeout', 'retry', 'signal', 'reentrant', 'mode'] as const;
const RETRY_KEYS = ['initialDelay', 'maxDelay', 'factor', 'jitter'] as const;

/** Throws `InvalidLockOptionsError` unless `value` is a plain object whose keys are all in `allowed`. */
export function assertKnownKeys(value: unknown, allowed: readonly string[], path: string): asserts value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidLockOptionsError(path, `expected an object, got ${describe(value)}.`);
  }
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) {
      throw new InvalidLockOptionsError(`${path}.${key}`, `unknown option. Known options: ${allowed.join(', ')}.`);
    }
  }
}

/**
 * Validates a duration in ms: a finite number in [min, MAX_DURATION_MS], returned as whole milliseconds.
 * A fraction is rounded up on purpose (`10_000 / 3` is a natural thing to write): servers only take whole
 * milliseconds (Redis `PEXPIRE 1000.5` is an error), and rounding up never shortens a lease or a wait.
 */
export function assertDuration(value: unknown, path: string, min: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new InvalidLockOptionsError(path, `expected a finite number of milliseconds, got ${describe(value)}.`);
  }
  const whole = Math.ceil(value);
  if (whole < min || whole > MAX_DURATION_MS) {
    throw new InvalidLockOptionsError(path, `must be between ${min} and ${MAX_DURATION_MS} ms, got ${value}.`);
  }
  return whole;
}

/** The shortest lease a lock may have, in ms: shorter ones expire before a round trip comes back. */
export const MIN_TTL_MS = 10;

function assertBoolean(value: unknown, path: string): boolean {
  if (typeof value !== 'boolean') throw new InvalidLockOptionsError(path, `expected true or false, got ${describe(value)}.`);
  return value;
}

function assertMode(value: unknown, path: string): LockMode {
  if (value !== 'exclusive' && value !== 'shared') {
    throw new InvalidLockOptionsError(path, `expected "exclusive" or "shared", got ${describe(value)}.`);
  }
  return value;
}

function assertSignal(value: unknown, path: string): AbortSignal {
  if (!(value instanceof AbortSignal)) throw new InvalidLockOptionsError(path, `expected an AbortSignal, got ${describe(value)}.`);
  return value;
}

/** Validates partial acquisition options (module defaults or per-call options) without applying defaults. */
export function validateAcquireOptions(input: unknown, path = 'options'): AcquireOptions {
  if (input === undefined) return {};
  assertKnownKeys(input, ACQUIRE_KEYS, path);
  const out: { -readonly [K in keyof AcquireOptions]: AcquireOptions[K] } = {};
  if (input.ttl !== undefined) out.ttl = assertDuration(input.ttl, `${path}.ttl`, MIN_TTL_MS);
  if (input.autoExtend !== undefined) out.autoExtend = assertBoolean(input.autoExtend, `${path}.autoExtend`);
  if (input.waitTimeout !== undefined) out.waitTimeout = assertDuration(input.waitTimeout, `${path}.waitTimeout`, 0);
  if (input.reentrant !== undefined) out.reentrant = assertBoolean(input.reentrant, `${path}.reentrant`);
  if (input.mode !== undefined) out.mode = assertMode(input.mode, `${path}.mode`);
  if (input.signal !== undefined) out.signal = assertSignal(input.signal, `${path}.signal`);
  if (input.retry !== undefined) out.retry = validateRetryOptions(input.retry, `${path}.retry`);
  return out;
}

/** Validates retry options; throws `InvalidLockOptionsError` naming the option under `path`. */
export function validateRetryOptions(input: unknown, path: string): RetryOptions {
  assertKnownKeys(input, RETRY_KEYS, path);
  const out: { -readonly [K in keyof RetryOptions]: RetryOptions[K] } = {};
  if (input.initialDelay !== undefined) out.initialDelay = assertDuration(input.initialDelay, `${path}.initialDelay`, 1);
  if (input.maxDelay !== undefined) out.maxDelay = assertDuration(input.maxDelay, `${path}.maxDelay`, 1);
  if (input.factor !== undefined) {
    if (typeof input.factor !== 'number' || !Number.isFinite(input.factor) || input.factor < 1 || input.factor > 10) {
      throw new InvalidLockOptionsError(`${path}.factor`, `expected a number from 1 to 10, got ${describe(input.factor)}.`);
    }
    out.factor = input.factor;
  }
  if (input.jitter !== undefined) {
    if (typeof input.jitter !== 'number' || !(input.jitter >= 0 && input.jitter <= 1)) {
      throw new InvalidLockOptionsError(`${path}.jitter`, `expected a number from 0 to 1, got ${describe(input.jitter)}.`);
    }
    out.jitter = input.jitter;
  }
  return out;
}

/** Applies per-call options over module defaults over `LOCK_DEFAULTS`. Inputs must already be validated. */
export function resolveAcquireOptions(call: AcquireOptions, defaults: LockDefaults): ResolvedAcquireOptions {
  const explicitTtl = call.ttl ?? defaults.ttl;
  // Most acquisitions set no retry options: the frozen defaults then serve as they are (no copy per call).
  const retry = call.retry === undefined && defaults.retry === undefined ? LOCK_DEFAULTS.retry : { ...LOCK_DEFAULTS.retry, ...defaults.retry, ...call.retry };
  if (retry.maxDelay < retry.initialDelay) {
    throw new InvalidLockOptionsError('retry.maxDelay', `must be at least retry.initialDelay (${retry.initialDelay} ms), got ${retry.maxDelay}.`);
  }
  return {
    ttl: explicitTtl ?? LOCK_DEFAULTS.ttl,
    autoExtend: call.autoExtend ?? defaults.autoExtend ?? explicitTtl === undefined,
    waitTimeout: call.waitTimeout ?? defaults.waitTimeout ?? LOCK_DEFAULTS.waitTimeout,
    retry,
    signal: call.signal,
    reentrant: call.reentrant ?? defaults.reentrant ?? LOCK_DEFAULTS.reentrant,
    mode: call.mode ?? defaults.mode ?? LOCK_DEFAULTS.mode,
  };
}

/** A short description of a value for error messages. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return typeof value === 'object' ? 'an object' : typeof value;
}
