import { InvalidLockOptionsError } from '../../errors';
import { MAX_DURATION_MS } from '../../locking/lock-options';
import { MAX_MEMCACHED_LEASE_MS, memcachedExpiry, MEMCACHED_MAX_RELATIVE_EXPIRY_S } from './memcached-expiry';

describe('memcachedExpiry', () => {
  it('rounds a lease up to whole seconds and adds two (an item lives more than N - 2 s)', () => {
    expect(memcachedExpiry(10)).toBe(3);
    expect(memcachedExpiry(999)).toBe(3);
    expect(memcachedExpiry(1_000)).toBe(3);
    expect(memcachedExpiry(1_000.5)).toBe(4);
    expect(memcachedExpiry(1_001)).toBe(4);
    expect(memcachedExpiry(30_000)).toBe(32);
  });

  it('never gives an expiry whose shortest life (N - 2 s) is below the lease', () => {
    for (const ttl of [1, 10, 333, 999, 1_000, 1_001, 1_999, 2_000, 10_000 / 3, 29_999, 30_000, 86_400_000]) {
      expect((memcachedExpiry(ttl) - 2) * 1_000).toBeGreaterThanOrEqual(ttl);
    }
  });

  it('keeps every lease the lock service accepts below 30 days, which memcached would read as a Unix time', () => {
    expect(memcachedExpiry(MAX_DURATION_MS)).toBeLessThanOrEqual(MEMCACHED_MAX_RELATIVE_EXPIRY_S);
    expect(memcachedExpiry(MAX_MEMCACHED_LEASE_MS)).toBe(MEMCACHED_MAX_RELATIVE_EXPIRY_S);
  });

  it('refuses a lease that would need more than 30 days, never shortening it', () => {
    expect(() => memcachedExpiry(MAX_MEMCACHED_LEASE_MS + 1)).toThrow(InvalidLockOptionsError);
    expect(() => memcachedExpiry(31 * 24 * 3_600_000)).toThrow(/at most .* ms on memcached/);
  });

  it.each([[0], [-5], [Number.NaN], [Number.POSITIVE_INFINITY]])('refuses %p', (ttl) => {
    expect(() => memcachedExpiry(ttl)).toThrow(InvalidLockOptionsError);
  });
});
