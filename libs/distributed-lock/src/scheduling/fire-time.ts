/**
 * The scheduled fire time a run belongs to, computed by every instance from its own clock at the moment
 * its timer fired, so that instances whose clocks disagree still name the same run.
 */
export interface FireSchedule {
  /** The fire time (ms since epoch) of a run that starts at `now` on the local clock. */
  fireTimeOf(now: number): number;
  /**
   * Until when (ms since epoch) another instance's timer may still fire into the run of `fireTime`, where
   * timers do not fire at the fire time itself (intervals). Undefined where they do (cron).
   */
  slotEndOf?(fireTime: number): number;
}

/**
 * `@Interval(periodMs)`: instances start their intervals at different moments, so no fire time is shared.
 * The run's slot is: wall-clock time cut into `periodMs`-long slots from the epoch, and the slot the run
 * starts in. Two instances then agree unless a run starts within the clock skew of a slot's edge.
 */
export function intervalSchedule(periodMs: number): FireSchedule {
  return { fireTimeOf: (now) => Math.floor(now / periodMs) * periodMs, slotEndOf: (fireTime) => fireTime + periodMs };
}

/**
 * A cron schedule: `next(after)` is the first fire time strictly after `after` (ms since epoch). The
 * run's fire time is the latest fire time at or before `now`. A cron timer fires when its own clock
 * reaches the fire time, never before, so each instance finds the same fire time from its own clock
 * however far the clocks disagree, as long as its timer fired less than one period late.
 */
export function cronSchedule(next: (after: number) => number): FireSchedule {
  return {
    fireTimeOf(now: number): number {
      const following = next(now);
      let lookback = Math.max(1_000, next(following) - following);
      // Irregular schedules (9:00 and 17:00) have gaps longer than the one after now: look further back.
      for (let attempt = 0; attempt < 24; attempt += 1) {
        let fire = next(now - lookback);
        if (fire <= now) {
          for (let later = next(fire); later <= now; later = next(fire)) fire = later;
          return fire;
        }
        lookback *= 2;
      }
      // No fire time before now at all (a schedule that starts later): the run is named by its second.
      return Math.floor(now / 1_000) * 1_000;
    },
  };
}

/** A one-off schedule (a cron `Date`): every run belongs to that one fire time. */
export function fixedSchedule(at: number): FireSchedule {
  return { fireTimeOf: () => at };
}
