import { randomUUID } from 'node:crypto';
import { expectCleanPermits, newHistory } from './history/expect-clean-history';
import { runPermitSoak } from './permit-soak';

/**
 * Issue 42, item 9, bounded: a Redis semaphore of 3 places, 12 contenders in 3 processes of contract subject
 * `subject`, while one process at a time is frozen past the permits' lease (holders and waiters alike) or
 * killed and replaced. The history of every process's holds, freezes and kills is checked: never more than 3
 * places in use, and every loss told. One file per mode, so that the two run side by side in the contract
 * files' pool. The long run of the same is `npm run soak -- semaphore` (bench/results/soak.json).
 */
export function describeRedisSemaphoreSoak(subject: string): void {
  describe(`A Redis semaphore through freezes and kills of its contenders' processes: ${subject}`, () => {
    it('never has more than its 3 places in use', async () => {
      const scenario = `${subject} semaphore: 12 contenders in 3 processes, frozen and killed`;
      const history = newHistory(scenario);
      const outcome = await runPermitSoak({
        key: `fault:${randomUUID().slice(0, 8)}:permit-soak`,
        history,
        subject,
        processes: 3,
        contenders: 4,
        permits: 3,
        ttlMs: 2_000,
        durationMs: 24_000,
        freezeMs: 5_000,
        kills: 1,
      });
      expect(outcome.crashed).toEqual([]);
      expect(outcome.untyped).toEqual([]);
      // The faults happened, to holders and to waiters.
      expect(outcome.freezes).toBeGreaterThanOrEqual(2);
      expect(outcome.kills).toBe(1);
      expect(outcome.frozenWaiters).toBeGreaterThan(0);
      expect(outcome.sections).toBeGreaterThan(0);
      expectCleanPermits(history, scenario, 3);
    }, 150_000);
  });
}
