import { DistributedLockError, type AcquireOptions, type LockService } from '@app/distributed-lock';
import type { HistoryLog } from './history/history-log';
import { recordedWithLock } from './history/recorded-section';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** What the contenders of one process saw. */
export interface ContendCounts {
  sections: number;
  /** Sections that found someone else inside (in this process; the history catches the others). */
  violations: number;
  typedFailures: number;
  untyped: unknown[];
}

/**
 * `contenders` loops (spread over `services`, holder names `<prefix>-<service index>`) take `key` until
 * `stopAt`, each section checking that nobody else of this process is inside and recording its hold in
 * `history`. Failures must be typed library errors; they are counted, and the loops go on. Bounded by `stopAt`.
 */
export async function contendUntil(services: readonly LockService[], history: HistoryLog, key: string, options: { contenders: number; stopAt: number; acquire: AcquireOptions; holderPrefix: string }): Promise<ContendCounts> {
  const counts: ContendCounts = { sections: 0, violations: 0, typedFailures: 0, untyped: [] };
  let inside = 0;
  const loops = Array.from({ length: options.contenders }, async (_, i) => {
    const locks = services[i % services.length];
    while (Date.now() < options.stopAt) {
      try {
        await recordedWithLock(history, `${options.holderPrefix}-${i % services.length}`, locks, key, async () => {
          inside += 1;
          if (inside > 1) counts.violations += 1;
          await sleep(5);
          inside -= 1;
          counts.sections += 1;
        }, options.acquire);
      } catch (error) {
        if (error instanceof DistributedLockError) counts.typedFailures += 1;
        else counts.untyped.push(error);
        await sleep(50);
      }
    }
  });
  await Promise.all(loops);
  return counts;
}
