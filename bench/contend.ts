import { closeSync, openSync, unlinkSync } from 'node:fs';
import type { BenchLock, ContendLayout } from './bench-subject';
import { quantile, wallClockMs, type Section } from './stats';

/** What one process's workers measured. */
export interface ContendResult {
  readonly sections: Section[];
  /**
   * Sections acquired before the end of the window: the throughput's count. Acquisitions still running
   * at the end finish after it (a barging peer's loser may sleep out a retry delay first); counting them
   * against a longer time would charge that tail to the subject once per run or turn.
   */
  readonly inWindow: number;
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
 * `workers` loops on one key until `endAt`: acquire (timed), a critical section that detects overlap (an
 * in-process gauge, plus an exclusive marker file across processes) and does the layout's work, release. Bounded by
 * `endAt`; an acquisition that fails counts as a failure and the loop goes on.
 */
export async function contend(
  locks: BenchLock | ContendLayout,
  key: string,
  workers: number,
  endAt: number,
  options: { workerPrefix: string; markerFile?: string; waitMs: number; measureFrom?: number; permits?: number },
): Promise<ContendResult> {
  // Before `measureFrom` the workers run but are not measured (the start's scramble settles); overlaps
  // are counted all the time.
  const from = options.measureFrom ?? Number.NEGATIVE_INFINITY;
  const layout: ContendLayout = 'lockOf' in locks ? locks : { lockOf: () => locks, holdMs: 0 };
  const sections: Section[] = [];
  const waits: number[] = [];
  const perWorker = new Array<number>(workers).fill(0);
  const workerWaitP99 = new Array<number>(workers).fill(0);
  const workerWaits: number[][] = Array.from({ length: workers }, () => []);
  let inside = 0;
  let failures = 0;
  let violations = 0;
  let inWindow = 0;
  // A semaphore lets `permits` in at once: across processes, one marker file per place.
  const permits = options.permits ?? 1;
  const markers = options.markerFile ? Array.from({ length: permits }, (_, i) => (permits === 1 ? (options.markerFile as string) : `${options.markerFile}.${i}`)) : [];
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      const worker = `${options.workerPrefix}${w}`;
      const lock = layout.lockOf(w);
      const own: number[] = [];
      while (wallClockMs() < endAt) {
        const started = wallClockMs();
        let release: () => Promise<void>;
        try {
          release = await lock.acquire(key, Math.max(1, Math.min(options.waitMs, endAt - started + 2_000)));
        } catch {
          const gaveUpAt = wallClockMs();
          if (gaveUpAt >= from) {
            failures += 1;
            own.push(gaveUpAt - started);
          }
          continue;
        }
        const acquiredAt = wallClockMs();
        const measured = acquiredAt >= from;
        if (measured) own.push(acquiredAt - started);
        if (measured && acquiredAt < endAt) inWindow += 1;
        inside += 1;
        if (inside > permits) violations += 1;
        let fd: number | undefined;
        let marker: string | undefined;
        for (const place of markers) {
          try {
            fd = openSync(place, 'wx');
            marker = place;
            break;
          } catch {
            // taken: the next place
          }
        }
        if (markers.length > 0 && fd === undefined) violations += 1;
        // The section's work (a checkout), with the marker held across it so that an overlap is seen.
        if (layout.holdMs > 0) await new Promise((resolve) => setTimeout(resolve, layout.holdMs));
        if (fd !== undefined) {
          closeSync(fd);
          unlinkSync(marker as string);
        }
        inside -= 1;
        const releasedAt = wallClockMs();
        try {
          await release();
        } catch {
          failures += 1;
        }
        if (!measured) continue;
        sections.push({ worker, acquiredAt, releasedAt });
        perWorker[w] += 1;
      }
      for (const wait of own) waits.push(wait); // not push(...own): a long run overflows the argument stack
      workerWaitP99[w] = own.length > 0 ? quantile(own, 0.99) : 0;
      workerWaits[w] = own;
    }),
  );
  return { sections, inWindow, waits, workerWaitP99, workerWaits, perWorker, failures, violations };
}
