/** The q-quantile (0..1) of `values` (sorted copy; nearest rank). */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** One critical section as recorded by a worker; times in ms on a clock shared by all processes. */
export interface Section {
  readonly worker: string;
  readonly acquiredAt: number;
  readonly releasedAt: number;
  /** Which run (turn) of the case recorded it, when a case is measured in several: no hand-over across runs. */
  readonly run?: number;
}

/** Hand-over figures from the ordered list of sections on one key. */
export function handoffFigures(sections: readonly Section[]): { handoffP50Ms: number; reacquireShare: number } {
  const ordered = [...sections].sort((a, b) => a.acquiredAt - b.acquiredAt);
  const gaps: number[] = [];
  let same = 0;
  for (let i = 1; i < ordered.length; i += 1) {
    if (ordered[i].run !== ordered[i - 1].run) continue;
    gaps.push(Math.max(0, ordered[i].acquiredAt - ordered[i - 1].releasedAt));
    if (ordered[i].worker === ordered[i - 1].worker) same += 1;
  }
  return { handoffP50Ms: round(quantile(gaps, 0.5), 3), reacquireShare: gaps.length > 0 ? round(same / gaps.length, 3) : 0 };
}

/** max/min of sections per worker (1 = perfectly even; Infinity when a worker starved). */
export function fairness(perWorker: readonly number[]): number {
  if (perWorker.length < 2) return 1;
  const min = Math.min(...perWorker);
  return min === 0 ? Number.POSITIVE_INFINITY : round(Math.max(...perWorker) / min, 2);
}

export function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** Milliseconds on a clock comparable across processes of one machine. */
export function wallClockMs(): number {
  return performance.timeOrigin + performance.now();
}
