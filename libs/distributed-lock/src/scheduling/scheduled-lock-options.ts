import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { assertDuration, assertKnownKeys, describe, MIN_TTL_MS } from '../locking/lock-options';

/** How a scheduled job is locked so that it runs once per cluster. Durations in ms. */
export interface ScheduledLockOptions {
  /**
   * Name of the job's lock, and its key (after the module's prefix). Default in Nest: `Class.method`.
   * Give two instances of one job the same name, and unrelated jobs different ones.
   */
  readonly name?: string;
  /**
   * The lease, in ms (required, at least 10): how long the lock lasts at most. It is not renewed: an
   * instance that crashed mid-run lets the job run again elsewhere once it ends, and a run that lasts
   * longer is told through its lock's signal (`currentLock().signal` aborts with `LockLostError`, and the
   * run ends with that error). Set it well above the job's longest run.
   */
  readonly lockAtMostFor: number;
  /**
   * Keep the lock at least this long after it was taken, in ms, also when the job finished sooner.
   * Default 0. An instance whose clock is behind, or whose timer fires late, then finds the lock still
   * taken and skips the run another instance already made. Choose it above the clock skew and timer
   * lateness between instances, below the time between two runs (unless `perRun`), and at most
   * `lockAtMostFor`.
   */
  readonly lockAtLeastFor?: number;
  /**
   * One lock per scheduled fire time (`name@2025-01-01T00:00:00.000Z`) instead of one per job. Default
   * false. A run that outlasts the next fire then does not make the next run skip, and `lockAtLeastFor`
   * may span several fires. For `@Cron` the fire time is the latest time the schedule names at or before
   * the run's start on the local clock; for `@Interval`, the start of the interval-long slot of wall-clock
   * time the run falls in, and the run's lock is kept until `lockAtLeastFor` after that slot ends, since
   * the other instances' intervals fire at other moments of the slot. Not for `@Timeout`, whose fire time
   * no two instances share.
   */
  readonly perRun?: boolean;
}

/** Defaults of the optional scheduled-lock options, in one place. Durations in ms. */
export const SCHEDULED_LOCK_DEFAULTS = Object.freeze({ lockAtLeastFor: 0, perRun: false });

/** Scheduled-lock options with every default applied. */
export interface ResolvedScheduledLockOptions {
  readonly name: string | undefined;
  readonly lockAtMostFor: number;
  readonly lockAtLeastFor: number;
  readonly perRun: boolean;
}

const KEYS = ['name', 'lockAtMostFor', 'lockAtLeastFor', 'perRun'] as const;

/**
 * Validates scheduled-lock options (`extraKeys` are accepted and left alone, e.g. the decorator's
 * `strategy`); throws `InvalidLockOptionsError` naming the option under `path`.
 */
export function validateScheduledLockOptions(input: unknown, path: string, extraKeys: readonly string[] = []): ResolvedScheduledLockOptions {
  assertKnownKeys(input, [...KEYS, ...extraKeys], path);
  if (input.lockAtMostFor === undefined) {
    throw new InvalidLockOptionsError(`${path}.lockAtMostFor`, 'is required: the longest a run may hold the lock, in ms (e.g. 60_000).');
  }
  const lockAtMostFor = assertDuration(input.lockAtMostFor, `${path}.lockAtMostFor`, MIN_TTL_MS);
  const lockAtLeastFor =
    input.lockAtLeastFor === undefined ? SCHEDULED_LOCK_DEFAULTS.lockAtLeastFor : assertDuration(input.lockAtLeastFor, `${path}.lockAtLeastFor`, 0);
  if (lockAtLeastFor > lockAtMostFor) {
    throw new InvalidLockOptionsError(`${path}.lockAtLeastFor`, `must not exceed lockAtMostFor (${lockAtMostFor} ms), got ${lockAtLeastFor}.`);
  }
  if (input.perRun !== undefined && typeof input.perRun !== 'boolean') {
    throw new InvalidLockOptionsError(`${path}.perRun`, `expected true or false, got ${describe(input.perRun)}.`);
  }
  if (input.name !== undefined && (typeof input.name !== 'string' || input.name.trim() === '')) {
    throw new InvalidLockOptionsError(`${path}.name`, `expected a non-empty string, got ${describe(input.name)}.`);
  }
  return { name: input.name, lockAtMostFor, lockAtLeastFor, perRun: input.perRun ?? SCHEDULED_LOCK_DEFAULTS.perRun };
}
