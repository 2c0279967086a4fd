import { randomUUID } from 'node:crypto';
import type { BenchLock, BenchShape, BenchSubject, ContendLayout } from './bench-subject';
import { contend, type ContendResult } from './contend';
import { quantile, wallClockMs } from './stats';

/** How many turns each subject gets in the uncontended case. */
export const TURNS = 8;

/**
 * How many turns each subject gets in a contended case: fewer and longer slices, since every slice
 * starts its workers afresh (a barging peer's losers first sleep out a retry delay).
 */
export const CONTENDED_TURNS = 4;

/** Measured figures of one subject in one case. */
export interface Measured {
  readonly result: ContendResult;
  readonly elapsed: number;
}

/**
 * One in-process case (1 worker: uncontended; more: one key contended) of several subjects, measured in
 * turns (A B C A B C …) rather than one after the other. On a shared 2-core machine a subject's figures
 * drift by ±30 % within a minute (a freshly started server warming up, the disk's flush times), and
 * measured minutes apart, two subjects of one server were compared at different moments: in one full
 * run the ZooKeeper textbook recipe at 8 workers went from 938 to 1,161 cs/s against the previous run
 * while ours went from 1,139 to 1,066. In turns, every subject gets the same share of each moment, and
 * their ratios hold. Each subject keeps one lock client for all its turns and is warmed up first.
 */
export async function caseInTurns(
  subjects: readonly BenchSubject[],
  workers: number,
  durationMs: number,
  shape: BenchShape = 'shared',
): Promise<Map<BenchSubject, Measured>> {
  const turns = workers === 1 ? TURNS : CONTENDED_TURNS;
  const open: Array<{ subject: BenchSubject; locks: BenchLock[]; layout: ContendLayout; key: string; parts: ContendResult[]; elapsed: number }> = [];
  try {
    for (const subject of subjects) {
      // One client for all workers, or (instances) one client per worker, each with its own connections.
      const locks: BenchLock[] = [];
      for (let i = 0; i < (shape === 'instances' ? workers : 1); i += 1) locks.push(await subject.create());
      const layout: ContendLayout = { lockOf: (w) => locks[w % locks.length], holdMs: 0 };
      const key = `bench:${randomUUID()}`;
      open.push({ subject, locks, layout, key, parts: [], elapsed: 0 });
      // Warm-up: connections, script cache, JIT.
      await contend(layout, key, workers, wallClockMs() + Math.min(500, durationMs / 5), { workerPrefix: 'warm', waitMs: 30_000, permits: subject.permits });
    }
    const windowMs = Math.max(50, Math.round(durationMs / turns));
    // Contended turns start their workers afresh: the scramble of the start (a barging peer's losers
    // sleeping out their first retry delay, 200 ± 100 ms for the Redlock ports) runs unmeasured, so that
    // each turn's window sees the lock as a long run does.
    const settleMs = workers === 1 ? 0 : Math.round(durationMs / 10);
    for (let turn = 0; turn < turns; turn += 1) {
      for (const entry of open) {
        const from = wallClockMs() + settleMs;
        entry.parts.push(await contend(entry.layout, entry.key, workers, from + windowMs, { workerPrefix: 'w', waitMs: 30_000, measureFrom: from, permits: entry.subject.permits }));
        // The window, not the wall time: sections are counted up to its end (see ContendResult.inWindow).
        entry.elapsed += windowMs;
      }
    }
    return new Map(open.map((entry) => [entry.subject, { result: joinParts(entry.parts, workers), elapsed: entry.elapsed }]));
  } finally {
    for (const entry of open) for (const lock of entry.locks) await lock.close();
  }
}

/**
 * One subject's turns as one result. Worker i of every turn is worker i of the whole (its counts and
 * waits add up); each turn's sections carry the turn's number, so that no hand-over is counted from one
 * turn's last section to the next turn's first (other subjects ran in between).
 */
function joinParts(parts: readonly ContendResult[], workers: number): ContendResult {
  const waitsOf = (w: number): number[] => parts.flatMap((part) => part.workerWaits?.[w] ?? []);
  return {
    sections: parts.flatMap((part, turn) => part.sections.map((section) => ({ ...section, run: turn }))),
    inWindow: parts.reduce((sum, part) => sum + part.inWindow, 0),
    waits: parts.flatMap((part) => part.waits),
    workerWaits: Array.from({ length: workers }, (_, w) => waitsOf(w)),
    workerWaitP99: Array.from({ length: workers }, (_, w) => {
      const waits = waitsOf(w);
      return waits.length > 0 ? quantile(waits, 0.99) : 0;
    }),
    perWorker: Array.from({ length: workers }, (_, w) => parts.reduce((sum, part) => sum + (part.perWorker[w] ?? 0), 0)),
    failures: parts.reduce((sum, part) => sum + part.failures, 0),
    violations: parts.reduce((sum, part) => sum + part.violations, 0),
  };
}
