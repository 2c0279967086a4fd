import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { describe } from '../../locking/lock-options';

/** memcached reads an expiry above this many seconds (30 days) as a Unix time, not as a duration. */
export const MEMCACHED_MAX_RELATIVE_EXPIRY_S = 60 * 60 * 24 * 30;

/** The expiry that stores an item already expired: a compare-and-set with it deletes the item (owner-checked). */
export const EXPIRED_AT_ONCE = -1;

/** The longest lease the strategy accepts, in ms: its expiry must stay a duration (see `memcachedExpiry`). */
export const MAX_MEMCACHED_LEASE_MS = (MEMCACHED_MAX_RELATIVE_EXPIRY_S - 2) * 1_000;

/**
 * The expiry, in whole seconds, that keeps a lease of `ttlMs` on the server for at least `ttlMs`.
 *
 * memcached counts time in whole seconds, with a clock it moves once a second, by a timer it sets one second
 * after its last tick. So its ticks drift across the second, and the tick that passes a second boundary late
 * moves the clock by two seconds at once: an item stored just before that tick had its expiry counted from a
 * clock almost two seconds behind. An item stored with an expiry of N seconds lives more than N - 2 seconds
 * (less what that tick was late), usually more than N - 1, and at most about N (the memcached fault suite
 * holds such a tick). So the lease is rounded up to whole seconds and two seconds are added: the server does
 * not end a lease before the holder's own clock does, and keeps a crashed holder's lock at most ⌈ttl⌉ + 2 s.
 * A lease that would need an expiry above 30 days (which memcached would read as a Unix time) is refused
 * with `InvalidLockOptionsError`, never shortened.
 */
export function memcachedExpiry(ttlMs: number): number {
  if (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs) || ttlMs <= 0) {
    throw new InvalidLockOptionsError('ttl', `expected a positive number of milliseconds, got ${describe(ttlMs)}.`);
  }
  const seconds = Math.ceil(ttlMs / 1_000) + 2;
  if (seconds > MEMCACHED_MAX_RELATIVE_EXPIRY_S) {
    throw new InvalidLockOptionsError('ttl', `must be at most ${MAX_MEMCACHED_LEASE_MS} ms on memcached (expiries above 30 days are read as Unix times), got ${ttlMs}.`);
  }
  return seconds;
}
