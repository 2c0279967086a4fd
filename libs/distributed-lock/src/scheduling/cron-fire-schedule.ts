import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { loadPeerDependency } from '../strategies/load-peer-dependency';
import { cronSchedule, fixedSchedule, type FireSchedule } from './fire-time';

/** What `@Cron` records about its schedule (from `@nestjs/schedule`'s metadata). */
export interface CronScheduleSource {
  /** A cron expression, or a `Date` (or Luxon `DateTime`) for a one-off run. */
  readonly cronTime: unknown;
  readonly timeZone?: string;
  readonly utcOffset?: number;
}

/** The part of the `cron` package's `CronTime` we use: the same schedule arithmetic `@nestjs/schedule` runs on. */
interface CronTimeLike {
  getNextDateFrom(start: Date, timeZone?: string): { toMillis(): number };
}
type CronTimeConstructor = new (source: unknown, timeZone?: string | null, utcOffset?: number | null) => CronTimeLike;

/**
 * The fire schedule of a `@Cron` job, computed by the `cron` package (a dependency of `@nestjs/schedule`),
 * so that fire times are the ones the scheduler itself uses, time zones and daylight saving included.
 * Throws `InvalidLockOptionsError` naming `where` when the schedule cannot be read.
 */
export function cronFireSchedule(source: CronScheduleSource, where: string, load?: (name: string) => unknown): FireSchedule {
  const { cronTime } = source;
  if (cronTime instanceof Date) return fixedSchedule(cronTime.getTime());
  if (typeof cronTime === 'object' && cronTime !== null && typeof (cronTime as { toMillis?: unknown }).toMillis === 'function') {
    return fixedSchedule((cronTime as { toMillis(): number }).toMillis());
  }
  const { CronTime } = loadPeerDependency<{ CronTime: CronTimeConstructor }>('cron', '@ScheduledLock({ perRun: true }) on @Cron', load);
  let time: CronTimeLike;
  try {
    time = new CronTime(cronTime, source.timeZone ?? null, source.utcOffset ?? null);
  } catch (error) {
    throw new InvalidLockOptionsError(where, `its @Cron schedule ${JSON.stringify(cronTime)} cannot be read: ${String(error)}`, { cause: error });
  }
  // The schedule is read in its own zone, as the scheduler reads it (the system's when none is named).
  const zone = source.timeZone ?? (source.utcOffset === undefined ? undefined : offsetZone(source.utcOffset));
  return cronSchedule((after) => time.getNextDateFrom(new Date(after), zone).toMillis());
}

/** A fixed-offset zone name for `utcOffset` (minutes east of UTC), e.g. "UTC+01:00". */
function offsetZone(minutes: number): string {
  const sign = minutes < 0 ? '-' : '+';
  const whole = Math.abs(minutes);
  return `UTC${sign}${String(Math.floor(whole / 60)).padStart(2, '0')}:${String(whole % 60).padStart(2, '0')}`;
}
