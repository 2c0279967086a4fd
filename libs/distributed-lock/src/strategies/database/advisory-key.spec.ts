import { getLockName, MAX_GET_LOCK_NAME, postgresAdvisoryKey } from './advisory-key';

describe('advisory lock keys', () => {
  it('maps a key to a signed 64-bit PostgreSQL key, the same every time, different for different keys', () => {
    const key = postgresAdvisoryKey('orders:42');
    expect(key).toBe(postgresAdvisoryKey('orders:42'));
    expect(key).not.toBe(postgresAdvisoryKey('orders:43'));
    expect(key).not.toBe(postgresAdvisoryKey('Orders:42'));
    for (const k of ['a', 'ü', 'x'.repeat(255), 'k ', 'k']) {
      const value = BigInt(postgresAdvisoryKey(k));
      expect(value >= -(2n ** 63n) && value < 2n ** 63n).toBe(true);
    }
    expect(postgresAdvisoryKey('k')).not.toBe(postgresAdvisoryKey('k '));
  });

  it('names short lower-case ASCII keys by themselves and hashes the rest into 64 characters', () => {
    expect(getLockName('orders:42')).toBe('orders:42');
    const long = getLockName('x'.repeat(65));
    expect(long).toMatch(/^dlock#[0-9a-f]{58}$/);
    expect(long).toHaveLength(MAX_GET_LOCK_NAME);
    expect(getLockName('x'.repeat(64))).toBe('x'.repeat(64));
    // MySQL compares names ignoring case: "K" and "k" must not be one lock there.
    expect(getLockName('Orders:42')).not.toBe(getLockName('orders:42'));
    expect(getLockName('Orders:42')).toMatch(/^dlock#/);
    expect(getLockName('ü')).toMatch(/^dlock#/);
    // No key is named like another key's hash.
    expect(getLockName(long)).not.toBe(long);
  });
});
