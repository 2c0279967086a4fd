/** How often a job's skipped runs are logged at most, in ms: the first skip, then a line a minute at most. */
export const SKIPPED_RUN_LOG_INTERVAL_MS = 60_000;

/**
 * Decides which skipped `@ScheduledLock` runs get a log line. A job that fires every second on every
 * instance is skipped every second by all but one of them: a line per skip was most of an application's log
 * (Nest 12's default logger shows debug lines). So a job's skips are logged once, then at most once per
 * interval, with how many there were since the last line. Every skip is still emitted as a `skipped` event.
 */
export class SkippedRunLog {
  /** Per job: when its last line was written, and the skips since then that got no line. */
  private readonly jobs = new Map<string, { loggedAt: number; unlogged: number }>();

  constructor(
    private readonly intervalMs: number = SKIPPED_RUN_LOG_INTERVAL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Notes a skip of `job`. Returns undefined when it gets no line, else how many skips the line stands for
   * (this one and those not logged since the last line).
   */
  skipped(job: string): number | undefined {
    const now = this.now();
    const seen = this.jobs.get(job);
    if (seen && now - seen.loggedAt < this.intervalMs) {
      seen.unlogged += 1;
      return undefined;
    }
    const count = (seen?.unlogged ?? 0) + 1;
    this.jobs.set(job, { loggedAt: now, unlogged: 0 });
    return count;
  }
}
