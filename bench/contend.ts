import { closeSync, openSync, unlinkSync } from 'node:fs';
import type { BenchLock } from './bench-subject';
import { quantile, wallClockMs, type Section } from './stats';

/** What one process's workers measured. */
export interface ContendResult {
  readonly sections: Section[];
  /** Every acquire's wait, failed ones included (a give-up after two seconds is a two-second wait). */
  readonly waits: number[];
  /** Per worker: the p99 of its own waits. A barging lock serves its re-acquiring worker fast and the
   * others late; the worst of these shows the late ones, which the pooled p99 hides. */
  readonly workerWaitP99: number[];
  /** Per worker: its waits (kept in process, so that turns of one case can be joined; not sent by child processes). */
  readonly workerWaits?: number[][];
  readonly perWorker: number[];
  readonly failures: number;
  readonly violations: number;
}

/**
 * `workers` loops on one key until `endAt`: acquire (timed), a minimal critical section that detects
 * overlap (an in-process gauge, plus an exclusive marker file across processes), release. Bounded by
 * `endAt`; an acquisition that fails counts as a failure and the loop goes on.
 */
export async function contend(
  lock: BenchLock,
  key: string,
  workers: number,
  endAt: number,
  options: { workerPrefix: string; markerFile?: string; waitMs: number },
): Promise<ContendResult> {
  const sections: Section[] = [];
  const waits: number[] = [];
  const perWorker = new Array<number>(workers).fill(0);
  const workerWaitP99 = new Array<number>(workers).fill(0);
  const workerWaits: number[][] = Array.from({ length: workers }, () => []);
  let inside = 0;
  let failures = 0;
  let violations = 0;
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      const worker = `${options.workerPrefix}${w}`;
      const own: number[] = [];
      while (wallClockMs() < endAt) {
        const started = wallClockMs();
        let release: () => Promise<void>;
        try {
          release = await lock.acquire(key, Math.max(1, Math.min(options.waitMs, endAt - started + 2_000)));
        } catch {
          failures += 1;
          own.push(wallClockMs() - started);
          continue;
        }
        const acquiredAt = wallClockMs();
        own.push(acquiredAt - started);
        inside += 1;
        if (inside > 1) violations += 1;
        let fd: number | undefined;
        if (options.markerFile) {
          try {
            fd = openSync(options.markerFile, 'wx');
          } catch {
            violations += 1;
          }
        }
        if (fd !== undefined) {
          closeSync(fd);
          unlinkSync(options.markerFile as string);
        }
        inside -= 1;
        const releasedAt = wallClockMs();
        try {
          await release();
        } catch {
          failures += 1;
        }
        sections.push({ worker, acquiredAt, releasedAt });
        perWorker[w] += 1;
      }
      for (const wait of own) waits.push(wait); // not push(...own): a long run overflows the argument stack
      workerWaitP99[w] = own.length > 0 ? quantile(own, 0.99) : 0;
      workerWaits[w] = own;
    }),
  );
  return { sections, waits, workerWaitP99, workerWaits, perWorker, failures, violations };
}
