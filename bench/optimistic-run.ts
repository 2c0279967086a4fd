import { TURNS } from './interleaved';
import type { BenchUpdater, OptimisticBenchSubject } from './optimistic-subjects';
import type { BenchRow } from './report';
import { quantile, round, wallClockMs } from './stats';

/** What `workers` measured while incrementing one counter row for a while. */
interface Increments {
  done: number;
  conflicts: number;
  latencies: number[];
  elapsed: number;
}

/**
 * Optimistic concurrency has no lock to take: `workers` increment one counter row with a version check,
 * re-reading on conflict. cs/s = successful increments per second; `failures` counts the conflicts that
 * were retried; `violations` = increments lost (counter value ≠ successful increments).
 */
export async function runOptimistic(subject: OptimisticBenchSubject, workers: number, durationMs: number): Promise<BenchRow> {
  const updater = await subject.create();
  try {
    const figures = await increment(updater, workers, durationMs);
    return optimisticRow(subject, workers, figures, figures.done - (await updater.value()));
  } finally {
    await updater.close();
  }
}

/**
 * The one-worker case of every optimistic subject in turns (A B A B …), for the reason given in
 * `caseInTurns`: one worker's figure is latency, which drifts within a minute on this machine.
 */
export async function uncontendedUpdatesInTurns(subjects: readonly OptimisticBenchSubject[], durationMs: number): Promise<Map<OptimisticBenchSubject, BenchRow>> {
  const open: Array<{ subject: OptimisticBenchSubject; updater: BenchUpdater; figures: Increments; warmUpDone: number }> = [];
  try {
    for (const subject of subjects) {
      const updater = await subject.create();
      const warmUp = await increment(updater, 1, Math.min(500, durationMs / 5));
      open.push({ subject, updater, figures: { done: 0, conflicts: 0, latencies: [], elapsed: 0 }, warmUpDone: warmUp.done });
    }
    const sliceMs = Math.max(50, Math.round(durationMs / TURNS));
    for (let turn = 0; turn < TURNS; turn += 1) {
      for (const entry of open) {
        const part = await increment(entry.updater, 1, sliceMs);
        entry.figures.done += part.done;
        entry.figures.conflicts += part.conflicts;
        entry.figures.latencies.push(...part.latencies);
        entry.figures.elapsed += part.elapsed;
      }
    }
    const rows = new Map<OptimisticBenchSubject, BenchRow>();
    for (const entry of open) {
      // The warm-up's increments are in the counter too.
      const lost = entry.warmUpDone + entry.figures.done - (await entry.updater.value());
      rows.set(entry.subject, optimisticRow(entry.subject, 1, entry.figures, lost));
    }
    return rows;
  } finally {
    for (const entry of open) await entry.updater.close();
  }
}

async function increment(updater: BenchUpdater, workers: number, durationMs: number): Promise<Increments> {
  const figures: Increments = { done: 0, conflicts: 0, latencies: [], elapsed: 0 };
  const started = wallClockMs();
  const endAt = started + durationMs;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (wallClockMs() < endAt) {
        const t0 = wallClockMs();
        figures.conflicts += await updater.increment();
        figures.latencies.push(wallClockMs() - t0);
        figures.done += 1;
      }
    }),
  );
  figures.elapsed = wallClockMs() - started;
  return figures;
}

function optimisticRow(subject: OptimisticBenchSubject, workers: number, figures: Increments, lost: number): BenchRow {
  return {
    id: subject.subject,
    subject: subject.subject,
    floor: subject.floor,
    ours: subject.ours,
    backend: 'mysql',
    case: workers > 1 ? 'contended' : 'uncontended',
    workers,
    processes: 1,
    csPerSec: Math.round((figures.done / figures.elapsed) * 1000),
    waitP50Ms: round(quantile(figures.latencies, 0.5), 2),
    waitP99Ms: round(quantile(figures.latencies, 0.99), 2),
    worstWorkerWaitP99Ms: round(quantile(figures.latencies, 0.99), 2),
    handoffP50Ms: 0,
    fairness: 1,
    reacquireShare: 0,
    failures: figures.conflicts,
    violations: Math.abs(lost),
    durationMs: Math.round(figures.elapsed),
    settings: subject.settings,
  };
}
