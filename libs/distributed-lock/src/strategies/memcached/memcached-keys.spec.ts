import { InvalidLockKeyError, InvalidLockOptionsError } from '../../errors';
import { assertMemcachedKeyFits, assertNamespace, encodeMemcachedKey, MAX_MEMCACHED_KEY_BYTES, memcachedLockKey } from './memcached-keys';

describe('memcached keys', () => {
  it('keeps printable ASCII as it is', () => {
    expect(memcachedLockKey('dlock:', 'stock:42/a-b_c.{x}')).toBe('dlock:stock:42/a-b_c.{x}');
  });

  it('escapes what ends a text-protocol key (space, control bytes) and every non-ASCII byte', () => {
    expect(encodeMemcachedKey('a b')).toBe('a%20b');
    expect(encodeMemcachedKey('k\r\nflush_all')).toBe('k%0D%0Aflush_all');
    expect(encodeMemcachedKey('é')).toBe('%C3%A9');
    expect(encodeMemcachedKey('\uFFFD')).toBe('%EF%BF%BD');
    expect(encodeMemcachedKey('x\u007f')).toBe('x%7F');
    for (const key of ['a b', 'k\r\n', 'é', 'plain', '%', 'tab\tx']) expect(encodeMemcachedKey(key)).toMatch(/^[\x21-\x7e]+$/);
  });

  it('is one to one: "%" is escaped too, so an escaped-looking key is a lock of its own', () => {
    const keys = ['a b', 'a%20b', 'a%2520b', 'k ', 'k', '%', '%25', 'é', '%C3%A9'];
    const encoded = keys.map(encodeMemcachedKey);
    expect(new Set(encoded).size).toBe(keys.length);
  });

  it(`refuses a key longer than ${MAX_MEMCACHED_KEY_BYTES} bytes once encoded with its namespace`, () => {
    expect(() => assertMemcachedKeyFits('dlock:', 'k'.repeat(244), 'memcached')).not.toThrow();
    expect(() => assertMemcachedKeyFits('dlock:', 'k'.repeat(245), 'memcached')).toThrow(InvalidLockKeyError);
    // 82 spaces take 246 bytes once escaped: too long with the namespace, although short as text.
    expect(() => assertMemcachedKeyFits('dlock:', ' '.repeat(82), 'memcached')).toThrow(/at most 250 bytes.*takes 252/);
  });

  it('accepts a namespace of printable ASCII only', () => {
    expect(assertNamespace('app1:locks:')).toBe('app1:locks:');
    expect(assertNamespace('')).toBe('');
    for (const bad of ['a b', 'a%b', 'ünï', 'x'.repeat(101), 42, null]) expect(() => assertNamespace(bad)).toThrow(InvalidLockOptionsError);
  });
});
