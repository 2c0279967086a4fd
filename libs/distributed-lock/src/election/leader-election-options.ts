import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { validateLockKey } from '../locking/lock-key';
import { assertDuration, assertKnownKeys, MIN_TTL_MS, validateRetryOptions, type RetryOptions } from '../locking/lock-options';

/** Options of one leader election. Durations in ms. */
export interface LeaderElectionOptions {
  /** The election's name: every process that names it campaigns for the same leadership. */
  readonly name: string;
  /**
   * Lease of the leader's lock, in ms (at least 10). The leader renews it every third of it; when the
   * leader's process dies, another process leads once the lease ends (on ZooKeeper, once the session
   * times out; on the pessimistic lock, as soon as its connection closes). Default 10 000.
   */
  readonly ttl?: number;
  /**
   * Pause before campaigning again after this process lost the leadership or could not reach the
   * backend: from `initialDelay` (default 500) growing by `factor` (2) up to `maxDelay` (10 000), with
   * `jitter` (0.5). Reset once a term lasted longer than `ttl`.
   */
  readonly retry?: RetryOptions;
}

/** Defaults of leader elections, in one place. Durations in ms. */
export const LEADER_ELECTION_DEFAULTS = Object.freeze({
  ttl: 10_000,
  /** Before the election's name in its lock key (after the lock service's prefix). */
  keyPrefix: 'leader:',
  /** How long one campaign waits in line before it lines up again (a fresh wait, nothing lost), in ms. */
  campaignRound: 60_000,
  retry: Object.freeze({ initialDelay: 500, maxDelay: 10_000, factor: 2, jitter: 0.5 }),
});

/** Election options with every default applied. */
export interface ResolvedLeaderElectionOptions {
  readonly name: string;
  readonly ttl: number;
  readonly retry: Required<RetryOptions>;
}

const KEYS = ['name', 'ttl', 'retry'] as const;

/** Validates election options; throws `InvalidLockOptionsError` naming the option under `path`. */
export function validateLeaderElectionOptions(input: unknown, path = 'LeaderElection options'): ResolvedLeaderElectionOptions {
  assertKnownKeys(input, KEYS, path);
  const name = validateLockKey(input.name, `${path}.name`);
  const ttl = input.ttl === undefined ? LEADER_ELECTION_DEFAULTS.ttl : assertDuration(input.ttl, `${path}.ttl`, MIN_TTL_MS);
  const retry = { ...LEADER_ELECTION_DEFAULTS.retry, ...(input.retry === undefined ? {} : validateRetryOptions(input.retry, `${path}.retry`)) };
  if (retry.maxDelay < retry.initialDelay) {
    throw new InvalidLockOptionsError(`${path}.retry.maxDelay`, `must be at least retry.initialDelay (${retry.initialDelay} ms), got ${retry.maxDelay}.`);
  }
  return { name, ttl, retry };
}
