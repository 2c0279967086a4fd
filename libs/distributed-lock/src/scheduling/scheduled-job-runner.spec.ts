import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockLostError } from '../errors/lock-lost.error';
import { assertLocked } from '../locking/assert-locked';
import { LockManager } from '../locking/lock-manager';
import { LockService } from '../locking/lock-service';
import { InMemoryLockStrategy } from '../strategies/in-memory/in-memory-lock.strategy';
import { intervalSchedule } from './fire-time';
import { ScheduledJobRunner } from './scheduled-job-runner';
import { ScheduledLockEvents } from './scheduled-lock-events';
import { validateScheduledLockOptions } from './scheduled-lock-options';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Three application instances of one job, each with its own lock service on one shared in-memory "server". */
function cluster(options: Record<string, unknown>, schedule = intervalSchedule(1_000)) {
  const server = new InMemoryLockStrategy();
  const events = new ScheduledLockEvents();
  const seen: string[] = [];
  events.on('skipped', (event) => seen.push(`skipped ${event.key}`));
  events.on('started', (event) => seen.push(`started ${event.key}`));
  const instances = [0, 1, 2].map(
    () =>
      new ScheduledJobRunner({
        job: 'Reports.daily',
        service: new LockService(new LockManager(server), { keyPrefix: 'app:' }),
        options: validateScheduledLockOptions(options, 'test'),
        schedule,
        events,
      }),
  );
  return { server, events, seen, instances };
}

describe('ScheduledJobRunner', () => {
  it('runs a fire once across instances: the others skip, and say so', async () => {
    const { instances, seen } = cluster({ lockAtMostFor: 5_000 });
    let runs = 0;
    const results = await Promise.all(
      instances.map((runner) =>
        runner.run(async () => {
          runs += 1;
          await sleep(30);
          return assertLocked('Reports.daily').key;
        }),
      ),
    );
    expect(runs).toBe(1);
    expect(results.filter((result) => result.ran)).toEqual([{ ran: true, value: 'app:Reports.daily' }]);
    expect(seen.filter((line) => line.startsWith('skipped'))).toEqual(['skipped app:Reports.daily', 'skipped app:Reports.daily']);
  });

  it('lockAtLeastFor: a fast run keeps the lock, so a late fire of the same tick is skipped; the next tick runs', async () => {
    const { instances } = cluster({ lockAtMostFor: 5_000, lockAtLeastFor: 200 });
    expect((await instances[0].run(() => 'fast')).ran).toBe(true);
    await sleep(80); // another instance, whose clock is behind or whose timer fired late
    expect((await instances[1].run(() => 'again')).ran).toBe(false);
    await sleep(180);
    expect((await instances[2].run(() => 'next tick')).ran).toBe(true);
  });

  it('without lockAtLeastFor the same late fire runs the job a second time (what the option prevents)', async () => {
    const { instances } = cluster({ lockAtMostFor: 5_000 });
    expect((await instances[0].run(() => 'fast')).ran).toBe(true);
    await sleep(80);
    expect((await instances[1].run(() => 'again')).ran).toBe(true);
  });

  it('lockAtMostFor: a run that outlasts the lease is told through its signal and ends with LockLostError; the lock is free then', async () => {
    const { instances, events } = cluster({ lockAtMostFor: 100, lockAtLeastFor: 50 });
    const finished: unknown[] = [];
    events.on('finished', (event) => finished.push(event.error));
    let toldAfter = -1;
    const started = Date.now();
    const run = instances[0].run(async () => {
      const lock = assertLocked();
      await new Promise<void>((resolve) => lock.signal.addEventListener('abort', () => resolve(), { once: true }));
      toldAfter = Date.now() - started;
      return 'report written';
    });
    const error = await run.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockLostError);
    // What the run returned, for a job whose writes were fenced.
    expect((error as LockLostError).sectionResult).toEqual({ value: 'report written' });
    expect(toldAfter).toBeGreaterThanOrEqual(90);
    expect(toldAfter).toBeLessThan(400);
    expect(finished[0]).toBeInstanceOf(LockLostError);
    expect((await instances[1].run(() => 'next')).ran).toBe(true);
  });

  it('a failing job rejects with its error and still keeps the lock for lockAtLeastFor', async () => {
    const { instances } = cluster({ lockAtMostFor: 5_000, lockAtLeastFor: 150 });
    await expect(
      instances[0].run(() => {
        throw new Error('report failed');
      }),
    ).rejects.toThrow('report failed');
    expect((await instances[1].run(() => 'again')).ran).toBe(false);
  });

  it('perRun: one key per fire time, so a long run does not make the next fire skip, and a fire is never run twice', async () => {
    let now = Date.parse('2025-03-01T10:15:00.000Z');
    const schedule = { fireTimeOf: () => now };
    const { instances, seen } = cluster({ lockAtMostFor: 5_000, lockAtLeastFor: 1_000, perRun: true }, schedule);
    let release = (): void => undefined;
    const long = instances[0].run(() => new Promise<void>((resolve) => (release = resolve)));
    await sleep(10);
    expect((await instances[1].run(() => 'same fire')).ran).toBe(false);
    now += 1_000;
    expect((await instances[1].run(() => 'next fire')).ran).toBe(true);
    release();
    await long;
    expect(seen).toEqual([
      'started app:Reports.daily@2025-03-01T10:15:00.000Z',
      'skipped app:Reports.daily@2025-03-01T10:15:00.000Z',
      'started app:Reports.daily@2025-03-01T10:15:01.000Z',
    ]);
  });

  it('perRun on an interval: an instance whose timer fires later in the same slot skips it, with the default lockAtLeastFor too', async () => {
    // Instances start their intervals at different moments: two timers fire 300 ms apart within one 1 s slot.
    const period = 1_000;
    const { instances, seen } = cluster({ lockAtMostFor: 5_000, perRun: true }, intervalSchedule(period));
    const slotLeft = (): number => period - (Date.now() % period);
    if (slotLeft() < 500) await sleep(slotLeft() + 5); // start near the beginning of a slot
    expect((await instances[0].run(() => 'first in the slot')).ran).toBe(true);
    await sleep(300);
    expect((await instances[1].run(() => 'same slot, later timer')).ran).toBe(false);
    await sleep(slotLeft() + 5);
    expect((await instances[2].run(() => 'next slot')).ran).toBe(true);
    expect(seen.map((line) => line.split(' ')[0])).toEqual(['started', 'skipped', 'started']);
  });

  it('perRun needs a schedule', () => {
    const service = new LockService(new LockManager(new InMemoryLockStrategy()));
    expect(
      () => new ScheduledJobRunner({ job: 'j', service, options: validateScheduledLockOptions({ lockAtMostFor: 10, perRun: true }, 't'), events: new ScheduledLockEvents() }),
    ).toThrow(InvalidLockOptionsError);
  });
});
