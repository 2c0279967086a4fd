import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { cronFireSchedule } from './cron-fire-schedule';
import { intervalSchedule } from './fire-time';

const at = (iso: string): number => Date.parse(iso);

describe('fire times', () => {
  it('cron: the latest fire time at or before the run, the same on instances whose clocks disagree', () => {
    const everyMinute = cronFireSchedule({ cronTime: '0 * * * * *', timeZone: 'UTC' }, 'Job#run');
    const tick = at('2025-03-01T10:15:00.000Z');
    // Each instance's timer fires when its own clock reaches the tick: a few ms to 50 s late on it.
    for (const late of [0, 3, 250, 10_000, 59_999]) expect(everyMinute.fireTimeOf(tick + late)).toBe(tick);
    expect(everyMinute.fireTimeOf(tick + 60_000)).toBe(tick + 60_000);
    const everySecond = cronFireSchedule({ cronTime: '* * * * * *' }, 'Job#run');
    expect(everySecond.fireTimeOf(tick + 999)).toBe(tick);
    expect(everySecond.fireTimeOf(tick + 1_004)).toBe(tick + 1_000);
  });

  it('cron: irregular schedules, time zones and one-off dates', () => {
    const twiceADay = cronFireSchedule({ cronTime: '0 0 9,17 * * *', timeZone: 'Europe/Paris' }, 'Job#run');
    // 09:00 in Paris is 08:00 UTC in winter; the previous fire of 07:59 UTC is 16:00 UTC the day before.
    expect(twiceADay.fireTimeOf(at('2025-01-10T08:00:00.020Z'))).toBe(at('2025-01-10T08:00:00.000Z'));
    expect(twiceADay.fireTimeOf(at('2025-01-10T07:59:59.000Z'))).toBe(at('2025-01-09T16:00:00.000Z'));
    const withOffset = cronFireSchedule({ cronTime: '0 0 9 * * *', utcOffset: 90 }, 'Job#run');
    expect(withOffset.fireTimeOf(at('2025-01-10T08:45:00.000Z'))).toBe(at('2025-01-10T07:30:00.000Z'));
    const once = cronFireSchedule({ cronTime: new Date('2030-01-01T00:00:00Z') }, 'Job#run');
    expect(once.fireTimeOf(Date.now())).toBe(at('2030-01-01T00:00:00Z'));
  });

  it('cron: a schedule the cron package cannot read fails naming the method', () => {
    expect(() => cronFireSchedule({ cronTime: 'every minute' }, 'Job#run')).toThrow(InvalidLockOptionsError);
    expect(() => cronFireSchedule({ cronTime: 'every minute' }, 'Job#run')).toThrow(/Job#run/);
  });

  it('interval: wall-clock slots of one period from the epoch', () => {
    const tenSeconds = intervalSchedule(10_000);
    expect(tenSeconds.fireTimeOf(at('2025-03-01T10:15:07.500Z'))).toBe(at('2025-03-01T10:15:00.000Z'));
    expect(tenSeconds.fireTimeOf(at('2025-03-01T10:15:10.000Z'))).toBe(at('2025-03-01T10:15:10.000Z'));
  });
});
