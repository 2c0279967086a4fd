import { retryDelay } from './retry-policy';

describe('retryDelay', () => {
  const retry = { initialDelay: 10, maxDelay: 200, factor: 2, jitter: 0.5 };

  it('grows exponentially up to the cap', () => {
    const noJitter = { ...retry, jitter: 0 };
    expect([0, 1, 2, 3, 4, 5, 50].map((attempt) => retryDelay(attempt, noJitter))).toEqual([10, 20, 40, 80, 160, 200, 200]);
  });

  it('removes up to the jitter share at random, never below 1 ms', () => {
    expect(retryDelay(3, retry, () => 0)).toBe(80);
    expect(retryDelay(3, retry, () => 1)).toBe(40);
    expect(retryDelay(0, { ...retry, initialDelay: 1, jitter: 1 }, () => 1)).toBe(1);
  });
});
