import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { validatePermitOptions } from './permit-options';

describe('validatePermitOptions', () => {
  it('applies the weight default and keeps the acquisition options', () => {
    const signal = new AbortController().signal;
    expect(validatePermitOptions({ permits: 5 })).toEqual({ permits: 5, weight: 1, acquire: {} });
    expect(validatePermitOptions({ permits: 5, weight: 5, ttl: 1_000.5, waitTimeout: 0, signal })).toEqual({
      permits: 5,
      weight: 5,
      acquire: { ttl: 1_001, waitTimeout: 0, signal },
    });
  });

  it.each([
    [undefined, 'options.permits', /needs its size/],
    [{}, 'options.permits', /whole number from 1 to 1000000, got undefined/],
    [{ permits: 0 }, 'options.permits', /got 0/],
    [{ permits: -3 }, 'options.permits', /got -3/],
    [{ permits: 2.5 }, 'options.permits', /got 2.5/],
    [{ permits: Number.NaN }, 'options.permits', /got NaN/],
    [{ permits: '4' }, 'options.permits', /got "4"/],
    [{ permits: 1_000_001 }, 'options.permits', /got 1000001/],
    [{ permits: 3, weight: 0 }, 'options.weight', /got 0/],
    [{ permits: 3, weight: 0.5 }, 'options.weight', /got 0.5/],
    [{ permits: 3, weight: 4 }, 'options.weight', /at most permits \(3\), got 4/],
    [{ permits: 3, mode: 'shared' }, 'options.mode', /unknown option/],
    [{ permits: 3, reentrant: false }, 'options.reentrant', /unknown option/],
    [{ permits: 3, ttl: 5 }, 'options.ttl', /between 10/],
    ['3', 'options', /expected an object/],
  ])('refuses %j naming %s', (input, option, message) => {
    let error: unknown;
    try {
      validatePermitOptions(input);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(InvalidLockOptionsError);
    expect((error as InvalidLockOptionsError).option).toBe(option);
    expect((error as Error).message).toMatch(message);
  });
});
