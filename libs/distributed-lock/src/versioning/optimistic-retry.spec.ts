import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { VersionConflictError } from '../errors/version-conflict.error';
import { runWithOptimisticRetry } from './optimistic-retry';

const fast = { initialDelay: 1, maxDelay: 2 };

describe('runWithOptimisticRetry', () => {
  it('re-runs on version conflicts and counts them', async () => {
    const conflicts: number[] = [];
    const result = await runWithOptimisticRetry(
      (attempt) => {
        if (attempt < 2) throw new VersionConflictError('product', 1, attempt, attempt + 1);
        return 'saved';
      },
      { retries: 5, backoff: fast, onConflict: (_error, attempt) => conflicts.push(attempt) },
    );
    expect(result).toBe('saved');
    expect(conflicts).toEqual([1, 2]);
  });

  it('rethrows the last conflict when retries run out, and other errors at once', async () => {
    let runs = 0;
    await expect(
      runWithOptimisticRetry(() => {
        runs += 1;
        throw new VersionConflictError('product', 1, 1);
      }, { retries: 2, backoff: fast }),
    ).rejects.toBeInstanceOf(VersionConflictError);
    expect(runs).toBe(3);
    runs = 0;
    await expect(
      runWithOptimisticRetry(() => {
        runs += 1;
        throw new TypeError('bug');
      }),
    ).rejects.toBeInstanceOf(TypeError);
    expect(runs).toBe(1);
  });

  it('validates its options', async () => {
    await expect(runWithOptimisticRetry(() => 1, { retries: -1 })).rejects.toBeInstanceOf(InvalidLockOptionsError);
    await expect(runWithOptimisticRetry(() => 1, { retries: 1.5 })).rejects.toThrow(/whole number/);
  });
});
