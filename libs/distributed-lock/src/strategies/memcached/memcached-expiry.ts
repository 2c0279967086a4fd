import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { describe } from '../../locking/lock-options';

/** memcached reads an expiry above this many seconds (30 days) as a Unix time, not as a duration. */
export const MEMCACHED_MAX_RELATIVE_EXPIRY_S = 60 * 60 * 24 * 30;

/** The expiry that stores an item already expired: a compare-and-set with it deletes the item (owner-checked). */
export const EXPIRED_AT_ONCE = -1;

/** The longest lease the strategy accepts, in ms: its expiry must stay a duration (see `memcachedExpiry`). */
export const MAX_MEMCACHED_LEASE_MS = (MEMCACHED_MAX_RELATIVE_EXPIRY_S - 1) * 1_000;

/**
 * The expiry, in whole seconds, that keeps a lease of `ttlMs` on the server for at least `ttlMs`.
 *
 * memcached counts time in whole seconds, with a clock it moves forward once a second: an item stored with
 * an expiry of N seconds lives more than N - 1 and at most N seconds, depending on where in the second it
 * was stored (`add` with 1 s can vanish well before 1 s: test/integration/memcached.int.spec.ts). So the lease is
 * rounded up to whole seconds and one second is added: the server never ends a lease before the holder's own clock does, and keeps a
 * crashed holder's lock at most ⌈ttl⌉ + 1 s. A lease that would need an expiry above 30 days (which memcached
 * would read as a Unix time) is refused with `InvalidLockOptionsError`, never shortened.
 */
export function memcachedExpiry(ttlMs: number): number {
  if (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs) || ttlMs <= 0) {
    throw new InvalidLockOptionsError('ttl', `expected a positive number of milliseconds, got ${describe(ttlMs)}.`);
  }
  const seconds = Math.ceil(ttlMs / 1_000) + 1;
  if (seconds > MEMCACHED_MAX_RELATIVE_EXPIRY_S) {
    throw new InvalidLockOptionsError('ttl', `must be at most ${MAX_MEMCACHED_LEASE_MS} ms on memcached (expiries above 30 days are read as Unix times), got ${ttlMs}.`);
  }
  return seconds;
}
