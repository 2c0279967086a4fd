import { randomUUID } from 'node:crypto';
import type { BenchLock, BenchSubject } from './bench-subject';
import { contend, type ContendResult } from './contend';
import { quantile, wallClockMs } from './stats';

/** How many turns each subject gets in an interleaved case. */
export const TURNS = 8;

/**
 * The uncontended case of several subjects, measured in turns (A B C A B C …) rather than one after the
 * other. One worker's figure is pure latency, and on a shared 2-core machine it drifts by ±30 % within a
 * minute (a freshly started server warming up, the disk's flush times): measured one after the other,
 * whoever comes first on a fresh server loses. In turns, every subject gets the same share of each moment,
 * and their ratios hold. Each subject keeps one lock client for all its turns and is warmed up first.
 */
export async function uncontendedInTurns(subjects: readonly BenchSubject[], durationMs: number): Promise<Map<BenchSubject, { result: ContendResult; elapsed: number }>> {
  const open: Array<{ subject: BenchSubject; lock: BenchLock; key: string; parts: ContendResult[]; elapsed: number }> = [];
  try {
    for (const subject of subjects) {
      const lock = await subject.create();
      const key = `bench:${randomUUID()}`;
      open.push({ subject, lock, key, parts: [], elapsed: 0 });
      // Warm-up: connections, script cache, JIT.
      await contend(lock, key, 1, wallClockMs() + Math.min(500, durationMs / 5), { workerPrefix: 'warm', waitMs: 30_000 });
    }
    const sliceMs = Math.max(50, Math.round(durationMs / TURNS));
    for (let turn = 0; turn < TURNS; turn += 1) {
      for (const entry of open) {
        const started = wallClockMs();
        entry.parts.push(await contend(entry.lock, entry.key, 1, started + sliceMs, { workerPrefix: 'w', waitMs: 30_000 }));
        entry.elapsed += wallClockMs() - started;
      }
    }
    return new Map(open.map((entry) => [entry.subject, { result: joinParts(entry.parts), elapsed: entry.elapsed }]));
  } finally {
    for (const entry of open) await entry.lock.close();
  }
}

/** One worker's turns as one result. */
function joinParts(parts: readonly ContendResult[]): ContendResult {
  const waits = parts.flatMap((part) => part.waits);
  return {
    sections: parts.flatMap((part) => part.sections),
    waits,
    workerWaitP99: [waits.length > 0 ? quantile(waits, 0.99) : 0],
    perWorker: [parts.reduce((sum, part) => sum + (part.perWorker[0] ?? 0), 0)],
    failures: parts.reduce((sum, part) => sum + part.failures, 0),
    violations: parts.reduce((sum, part) => sum + part.violations, 0),
  };
}
