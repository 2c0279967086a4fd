import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LOCK_DEFAULTS, resolveAcquireOptions, validateAcquireOptions } from './lock-options';

describe('acquire options', () => {
  it('applies call options over module defaults over the library defaults', () => {
    const resolved = resolveAcquireOptions({ waitTimeout: 0 }, { waitTimeout: 50, ttl: 1_000, retry: { maxDelay: 100 } });
    expect(resolved.waitTimeout).toBe(0);
    expect(resolved.ttl).toBe(1_000);
    expect(resolved.retry).toEqual({ ...LOCK_DEFAULTS.retry, maxDelay: 100 });
    expect(resolved.mode).toBe('exclusive');
    expect(resolved.reentrant).toBe(true);
  });

  it('extends automatically only when no lease length was chosen', () => {
    expect(resolveAcquireOptions({}, {}).autoExtend).toBe(true);
    expect(resolveAcquireOptions({ ttl: 500 }, {}).autoExtend).toBe(false);
    expect(resolveAcquireOptions({ ttl: 500, autoExtend: true }, {}).autoExtend).toBe(true);
    expect(resolveAcquireOptions({}, { ttl: 500 }).autoExtend).toBe(false);
  });

  it('keeps 0 as a value rather than replacing it with a default', () => {
    expect(resolveAcquireOptions({}, { waitTimeout: 0 }).waitTimeout).toBe(0);
  });

  it('names the option and the fix in its errors', () => {
    expect(() => validateAcquireOptions({ ttl: -1 })).toThrow(/options\.ttl.*between 10 and/);
    expect(() => validateAcquireOptions({ waitTimeout: Infinity })).toThrow(/finite number/);
    expect(() => validateAcquireOptions({ wait: 5 })).toThrow(/options\.wait.*unknown option. Known options/);
    expect(() => validateAcquireOptions('fast')).toThrow(InvalidLockOptionsError);
    expect(() => validateAcquireOptions({ retry: { factor: 0.5 } })).toThrow(/factor/);
    expect(() => validateAcquireOptions({ waitTimeout: 3_000_000_000 })).toThrow(/2147483647/);
  });
});
