/** A hold of a lock as recorded by its holder: ms on a clock every process of the machine shares. */
export interface TimedHold {
  readonly startedAt: number;
  readonly endedAt: number;
}

/** Two holders of one lock at once: how many pairs of holds overlapped, and for how long each. */
export interface DoubleGrants {
  readonly count: number;
  /** Per overlapping pair, in start order: how long both held, in ms. */
  readonly windowsMs: readonly number[];
}

/**
 * The pairs of holds (of one key) that overlapped, and the window of each: from the later one's start to
 * the first of the two ends. Holds that touch (one ends as the next starts) do not overlap.
 */
export function doubleGrants(holds: readonly TimedHold[]): DoubleGrants {
  const ordered = [...holds].sort((a, b) => a.startedAt - b.startedAt);
  const windowsMs: number[] = [];
  for (let i = 0; i < ordered.length; i += 1) {
    for (let j = i + 1; j < ordered.length && ordered[j].startedAt < ordered[i].endedAt; j += 1) {
      windowsMs.push(Math.min(ordered[i].endedAt, ordered[j].endedAt) - ordered[j].startedAt);
    }
  }
  return { count: windowsMs.length, windowsMs };
}
