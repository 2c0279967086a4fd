import 'reflect-metadata';
import { Injectable, Logger } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { ScheduledLockEvents } from '../../scheduling/scheduled-lock-events';
import { InMemoryLockStrategy } from '../../strategies/in-memory/in-memory-lock.strategy';
import { ScheduledLock } from '../decorators/scheduled-lock.decorator';
import { DistributedLockModule } from '../distributed-lock.module';
import { LockRegistry } from '../lock-registry';
import { SkippedRunLog } from './skipped-run-log';

describe('SkippedRunLog', () => {
  it("logs a job's first skip, then one line per interval standing for the skips since the last", () => {
    let now = 0;
    const log = new SkippedRunLog(60_000, () => now);
    expect(log.skipped('a')).toBe(1);
    for (now = 1_000; now < 60_000; now += 1_000) expect(log.skipped('a')).toBeUndefined();
    expect(log.skipped('b')).toBe(1);
    now = 60_000;
    expect(log.skipped('a')).toBe(60);
    now = 200_000;
    expect(log.skipped('a')).toBe(1);
  });
});

describe('skipped @ScheduledLock runs in the log', () => {
  it('a job skipped on every fire logs one debug line, emits every skip, and lost locks still warn', async () => {
    const debug = vi.spyOn(Logger.prototype, 'debug').mockImplementation(() => undefined);
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    @Injectable()
    class Jobs {
      @ScheduledLock({ lockAtMostFor: 5_000, lockAtLeastFor: 5_000 })
      async everySecond(): Promise<void> {}
      @ScheduledLock({ lockAtMostFor: 5_000, lockAtLeastFor: 5_000 })
      async another(): Promise<void> {}
    }
    const strategy = new InMemoryLockStrategy();
    const app = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot({ strategies: { default: strategy } })],
      providers: [Jobs],
    }).compile();
    await app.init();
    try {
      const jobs = app.get(Jobs);
      const skipped: string[] = [];
      app.get(ScheduledLockEvents).on('skipped', (event) => skipped.push(event.job));
      // The first run takes the lock and keeps it for lockAtLeastFor: the 30 fires after it are skipped.
      for (let fire = 0; fire <= 30; fire += 1) await jobs.everySecond();
      await jobs.another();
      await jobs.another();
      expect(skipped).toEqual([...Array<string>(30).fill('Jobs.everySecond'), 'Jobs.another']);
      const skipLines = debug.mock.calls.map(([line]) => String(line)).filter((line) => line.includes('skipped'));
      expect(skipLines).toEqual([
        expect.stringContaining('Scheduled job "Jobs.everySecond" skipped: its lock "Jobs.everySecond"'),
        expect.stringContaining('Scheduled job "Jobs.another" skipped: its lock "Jobs.another"'),
      ]);

      const locks = app.get(LockRegistry).service();
      const held = await locks.acquire('lost-one', { ttl: 1_000 });
      strategy.forceRelease('lost-one');
      await held.extend().catch(() => undefined);
      expect(warn).toHaveBeenCalledWith(expect.stringContaining('Lock "lost-one" (strategy "default") lost'));
    } finally {
      debug.mockRestore();
      warn.mockRestore();
      await app.close();
    }
  });
});
