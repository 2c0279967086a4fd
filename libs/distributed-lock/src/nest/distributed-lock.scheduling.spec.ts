import 'reflect-metadata';
import { Injectable, Logger, Module, type DynamicModule, type Type } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Cron, Interval, ScheduleExplorer, ScheduleModule, Timeout } from '@nestjs/schedule';
import { Test, type TestingModule } from '@nestjs/testing';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockAssertionError } from '../errors/lock-assertion.error';
import { StrategyNotRegisteredError } from '../errors/strategy-not-registered.error';
import { assertLocked } from '../locking/assert-locked';
import type { LockStrategy } from '../locking/lock-strategy.interface';
import type { ScheduledLockEventMap } from '../scheduling/scheduled-lock-events';
import { ScheduledLockEvents } from '../scheduling/scheduled-lock-events';
import { InMemoryLockStrategy } from '../strategies/in-memory/in-memory-lock.strategy';
import { Locked } from './decorators/locked.decorator';
import { ScheduledLock } from './decorators/scheduled-lock.decorator';
import { DistributedLockModule } from './distributed-lock.module';
import { LockedMethodExplorer } from './explorer/locked-method.explorer';
import { LockMetadataAccessor } from './explorer/lock-metadata.accessor';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A client of one shared in-memory "server", as separate app instances each have one; closing it closes nothing shared. */
function clientOf(server: InMemoryLockStrategy): LockStrategy {
  return new Proxy(server, { get: (target, property) => (property === 'close' ? async () => undefined : Reflect.get(target, property, target)) });
}

/** Runs of every job, across the app instances of one test: `job instance`. */
type Runs = string[];

function jobs(runs: Runs, instance: number) {
  @Injectable()
  class ReportJobs {
    // @nestjs/schedule's decorator above ours, then below it: both orders must lock.
    @Timeout(40)
    @ScheduledLock({ lockAtMostFor: 5_000, lockAtLeastFor: 2_000 })
    async scheduleAbove(): Promise<void> {
      assertLocked('ReportJobs.scheduleAbove');
      runs.push(`above ${instance}`);
    }

    @ScheduledLock({ name: 'below', lockAtMostFor: 5_000, lockAtLeastFor: 2_000 })
    @Timeout(40)
    async scheduleBelow(): Promise<void> {
      assertLocked('below');
      runs.push(`below ${instance}`);
    }
  }
  return ReportJobs;
}

async function boot(imports: Array<Type | DynamicModule>, providers: Type[]): Promise<TestingModule> {
  const app = await Test.createTestingModule({ imports, providers }).compile();
  await app.init();
  return app;
}

describe('@ScheduledLock with @nestjs/schedule', () => {
  it("reads @nestjs/schedule's own metadata for @Cron, @Interval and @Timeout", () => {
    class Decorated {
      @Cron('*/5 * * * * *', { timeZone: 'Europe/Paris' })
      cron(): void {}
      @Interval(1_500)
      interval(): void {}
      @Timeout('named', 250)
      timeout(): void {}
      plain(): void {}
    }
    const accessor = new LockMetadataAccessor(new Reflector());
    const proto = Decorated.prototype;
    expect(accessor.schedule(proto.cron)).toEqual({ kind: 'cron', cron: expect.objectContaining({ cronTime: '*/5 * * * * *', timeZone: 'Europe/Paris' }) });
    expect(accessor.schedule(proto.interval)).toEqual({ kind: 'interval', periodMs: 1_500 });
    expect(accessor.schedule(proto.timeout)).toEqual({ kind: 'timeout', delayMs: 250 });
    expect(accessor.schedule(proto.plain)).toBeUndefined();
  });

  it.each([
    ['ScheduleModule imported first', true],
    ['DistributedLockModule imported first', false],
  ])('runs each job once across three app instances, in either decorator order, with %s', async (_order, scheduleFirst) => {
    const server = new InMemoryLockStrategy();
    const runs: Runs = [];
    const skipped: Array<ScheduledLockEventMap['skipped'][0]> = [];
    const hookOrder: string[] = [];
    const scheduleInit = vi.spyOn(ScheduleExplorer.prototype, 'onModuleInit').mockImplementation(function (this: ScheduleExplorer) {
      hookOrder.push('schedule');
      this.explore();
    });
    const original = LockedMethodExplorer.prototype.onModuleInit;
    const lockInit = vi.spyOn(LockedMethodExplorer.prototype, 'onModuleInit').mockImplementation(function (this: LockedMethodExplorer) {
      hookOrder.push('lock');
      return original.call(this);
    });
    const apps: TestingModule[] = [];
    try {
      for (const instance of [0, 1, 2]) {
        const lockModule = DistributedLockModule.forRoot({ strategies: { default: clientOf(server) } });
        const imports = scheduleFirst ? [ScheduleModule.forRoot(), lockModule] : [lockModule, ScheduleModule.forRoot()];
        const app = await boot(imports, [jobs(runs, instance)]);
        app.get(ScheduledLockEvents).on('skipped', (event) => skipped.push(event));
        apps.push(app);
      }
      await sleep(300);
      // The scheduler took the methods before our wrapping (ScheduleModule first) or after it: locked either way.
      expect(hookOrder.slice(0, 2)).toEqual(scheduleFirst ? ['schedule', 'lock'] : ['lock', 'schedule']);
      expect(runs.filter((run) => run.startsWith('above'))).toHaveLength(1);
      expect(runs.filter((run) => run.startsWith('below'))).toHaveLength(1);
      expect(skipped.map((event) => event.key).sort()).toEqual(['ReportJobs.scheduleAbove', 'ReportJobs.scheduleAbove', 'below', 'below']);
    } finally {
      scheduleInit.mockRestore();
      lockInit.mockRestore();
      await Promise.all(apps.map((app) => app.close()));
    }
  });

  it("the order hazard is real: with ScheduleModule imported first, its explorer takes the methods before ours wraps them", async () => {
    const seen: string[] = [];
    const scheduleInit = vi.spyOn(ScheduleExplorer.prototype, 'onModuleInit').mockImplementation(function (this: ScheduleExplorer) {
      seen.push('schedule');
      this.explore();
    });
    const original = LockedMethodExplorer.prototype.onModuleInit;
    const lockInit = vi.spyOn(LockedMethodExplorer.prototype, 'onModuleInit').mockImplementation(function (this: LockedMethodExplorer) {
      seen.push('lock');
      return original.call(this);
    });
    try {
      const app = await boot([ScheduleModule.forRoot(), DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy() } })], [jobs([], 0)]);
      expect(seen).toEqual(['schedule', 'lock']);
      await app.close();
      seen.length = 0;
      const reversed = await boot([DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy() } }), ScheduleModule.forRoot()], [jobs([], 0)]);
      expect(seen).toEqual(['lock', 'schedule']);
      await reversed.close();
    } finally {
      scheduleInit.mockRestore();
      lockInit.mockRestore();
    }
  });

  it('perRun on an @Interval: at most one run per slot across three instances, and the slots do run', async () => {
    const server = new InMemoryLockStrategy();
    // Runs per slot, named by the key the run holds: the slot the library found when the timer fired. The
    // clock read inside the body may already be in the next slot (CI saw it once: the same slot counted
    // twice while the two runs held different keys), so it cannot name the run.
    const slots = new Map<string, number>();
    const make = () => {
      @Injectable()
      class Ticker {
        @Interval(100)
        @ScheduledLock({ lockAtMostFor: 1_000, lockAtLeastFor: 100, perRun: true })
        async tick(): Promise<void> {
          const { key } = assertLocked();
          expect(key).toMatch(/^Ticker\.tick@\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d00Z$/);
          slots.set(key, (slots.get(key) ?? 0) + 1);
        }
      }
      return Ticker;
    };
    const apps = await Promise.all([0, 1, 2].map(() => boot([ScheduleModule.forRoot(), DistributedLockModule.forRoot({ strategies: { default: clientOf(server) } })], [make()])));
    // Six slots run: about 600 ms, longer on a loaded machine (a stalled timer skips slots), never forever.
    for (const deadline = Date.now() + 10_000; slots.size < 6 && Date.now() < deadline; ) await sleep(50);
    await Promise.all(apps.map((app) => app.close()));
    expect(slots.size).toBeGreaterThanOrEqual(6);
    expect([...slots].filter(([, count]) => count !== 1)).toEqual([]);
  });

  it('locks on the strategy named by the decorator, else by forFeature, else the default; logs and emits a skip', async () => {
    const server = new InMemoryLockStrategy();
    const debug = vi.spyOn(Logger.prototype, 'debug').mockImplementation(() => undefined);
    @Injectable()
    class Jobs {
      @ScheduledLock({ lockAtMostFor: 1_000, strategy: 'other' })
      async named(): Promise<string | undefined> {
        return assertLocked().key;
      }
      @ScheduledLock({ lockAtMostFor: 1_000, lockAtLeastFor: 500 })
      async featured(): Promise<string | undefined> {
        return assertLocked().key;
      }
    }
    @Module({ imports: [DistributedLockModule.forFeature({ strategy: 'feature', keyPrefix: 'jobs:' })], providers: [Jobs] })
    class JobsModule {}
    const app = await boot(
      [DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy(), other: clientOf(server), feature: clientOf(server) }, keyPrefix: 'app:' }), JobsModule],
      [],
    );
    try {
      const jobs = app.get(Jobs);
      const started: string[] = [];
      app.get(ScheduledLockEvents).on('started', (event) => started.push(`${event.strategy} ${event.key}`));
      expect(await jobs.named()).toBe('app:jobs:Jobs.named');
      expect(await jobs.featured()).toBe('app:jobs:Jobs.featured');
      expect(started).toEqual(['other app:jobs:Jobs.named', 'feature app:jobs:Jobs.featured']);
      // lockAtLeastFor still holds the lock: a second call in that time is skipped, resolving undefined.
      expect(await jobs.featured()).toBeUndefined();
      expect(debug).toHaveBeenCalledWith(expect.stringContaining('Scheduled job "Jobs.featured" skipped'));
    } finally {
      debug.mockRestore();
      await app.close();
    }
  });

  it('a @ScheduledLock method called before the module wrapped it rejects instead of running unlocked', async () => {
    let ran = false;
    class Unwrapped {
      @ScheduledLock({ lockAtMostFor: 1_000 })
      async job(): Promise<void> {
        ran = true;
      }
    }
    await expect(new Unwrapped().job()).rejects.toBeInstanceOf(LockAssertionError);
    await expect(new Unwrapped().job()).rejects.toThrow(/Unwrapped#job.*DistributedLockModule/);
    expect(ran).toBe(false);
  });

  it.each([
    [
      'perRun on a @Timeout',
      () => {
        class Job {
          @Timeout(10)
          @ScheduledLock({ lockAtMostFor: 1_000, perRun: true })
          async run(): Promise<void> {}
        }
        return Job;
      },
      /Job#run.*@Timeout fires once per process/,
    ],
    [
      'perRun without a schedule',
      () => {
        class Job {
          @ScheduledLock({ lockAtMostFor: 1_000, perRun: true })
          async run(): Promise<void> {}
        }
        return Job;
      },
      /Job#run.*@Cron or an @Interval/,
    ],
    [
      '@Locked and @ScheduledLock together',
      () => {
        class Job {
          @Locked('k')
          @ScheduledLock({ lockAtMostFor: 1_000 })
          async run(): Promise<void> {}
        }
        return Job;
      },
      /Job#run.*remove @Locked/,
    ],
    [
      '@Locked on a scheduled method',
      () => {
        class Job {
          @Cron('* * * * * *')
          @Locked('k')
          async run(): Promise<void> {}
        }
        return Job;
      },
      /Job#run.*Use @ScheduledLock/,
    ],
    [
      'no lockAtMostFor',
      () => {
        class Job {
          @ScheduledLock({} as { lockAtMostFor: number })
          async run(): Promise<void> {}
        }
        return Job;
      },
      /Job#run.*lockAtMostFor.*required/,
    ],
  ])('fails at bootstrap, naming Class#method, on %s', async (_what, make, message) => {
    const Job = make();
    Injectable()(Job);
    const error = await boot([ScheduleModule.forRoot(), DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy() } })], [Job]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidLockOptionsError);
    expect(String(error)).toMatch(message);
  });

  it('fails at bootstrap on an unknown strategy', async () => {
    @Injectable()
    class Job {
      @ScheduledLock({ lockAtMostFor: 1_000, strategy: 'nope' })
      async run(): Promise<void> {}
    }
    const error = await boot([DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy() } })], [Job]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StrategyNotRegisteredError);
    expect(String(error)).toContain('Job#run');
  });
});
