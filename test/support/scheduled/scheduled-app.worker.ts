// One instance of an application whose scheduled jobs must run once per cluster: a 1 s cron per
// strategy (each its own job and lock), a per-run job, and a control job without lockAtLeastFor. Every
// run is recorded in SCHEDULED_RUN_LOG and printed ("run <job> <tick>"); "ready" once the jobs are
// mounted. Env: INSTANCE (its name), SCHEDULED_RUN (the test run, in every lock name), SCHEDULE_FIRST=1
// (import ScheduleModule before DistributedLockModule), CLOCK_OFFSET_MS (with offset-clock.ts preloaded).
// SIGTERM closes the app (locks kept by lockAtLeastFor are left to their lease); SIGKILL is the crash.
import 'reflect-metadata';
import { Injectable, Module, type DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Cron, ScheduleModule } from '@nestjs/schedule';
import { assertLocked, DistributedLockModule, ScheduledLock } from '@app/distributed-lock';
import { APP_STRATEGIES, createAppStrategies } from '../app-strategies';
import { LOCK_AT_LEAST_FOR, LOCK_AT_MOST_FOR } from './scheduled-app.config';
import { ScheduledRunLog } from './scheduled-run-log';

const RUN = process.env.SCHEDULED_RUN ?? 'local';
const WORK_MS = 250;
const EVERY_SECOND = '* * * * * *';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const lock = (strategy: keyof typeof APP_STRATEGIES, extra: { perRun?: boolean; lockAtLeastFor?: number } = {}) =>
  ScheduledLock({ name: `${RUN}:${strategy}${extra.perRun ? ':per-run' : ''}${extra.lockAtLeastFor === 0 ? ':control' : ''}`, strategy, lockAtMostFor: LOCK_AT_MOST_FOR, lockAtLeastFor: LOCK_AT_LEAST_FOR, ...extra });

@Injectable()
class RunLog extends ScheduledRunLog {
  constructor() {
    super(process.env.SCHEDULED_RUN_LOG as string, process.env.INSTANCE as string);
  }

  /** A job's body: checks it runs under its lock, records itself, and works a little. */
  async work(job: string): Promise<void> {
    assertLocked();
    const end = this.begin(job);
    await sleep(WORK_MS);
    end();
  }
}

// Half the jobs put the lock decorator above @Cron, half below: both orders are exercised in every run.
@Injectable()
class Jobs {
  constructor(private readonly runs: RunLog) {}

  @Cron(EVERY_SECOND)
  @lock('redis')
  redis(): Promise<void> {
    return this.runs.work('redis');
  }

  @lock('redlock')
  @Cron(EVERY_SECOND)
  redlock(): Promise<void> {
    return this.runs.work('redlock');
  }

  @Cron(EVERY_SECOND)
  @lock('row')
  row(): Promise<void> {
    return this.runs.work('row');
  }

  @lock('sqlite')
  @Cron(EVERY_SECOND)
  sqlite(): Promise<void> {
    return this.runs.work('sqlite');
  }

  @Cron(EVERY_SECOND)
  @lock('pessimistic')
  pessimistic(): Promise<void> {
    return this.runs.work('pessimistic');
  }

  @lock('zookeeper')
  @Cron(EVERY_SECOND)
  zookeeper(): Promise<void> {
    return this.runs.work('zookeeper');
  }

  @Cron(EVERY_SECOND)
  @lock('etcd')
  etcd(): Promise<void> {
    return this.runs.work('etcd');
  }

  @lock('row-postgres')
  @Cron(EVERY_SECOND)
  rowPostgres(): Promise<void> {
    return this.runs.work('row-postgres');
  }

  @Cron(EVERY_SECOND)
  @lock('pessimistic-postgres')
  pessimisticPostgres(): Promise<void> {
    return this.runs.work('pessimistic-postgres');
  }

  @lock('advisory-postgres')
  @Cron(EVERY_SECOND)
  advisoryPostgres(): Promise<void> {
    return this.runs.work('advisory-postgres');
  }

  @Cron(EVERY_SECOND)
  @lock('advisory-mysql')
  advisoryMysql(): Promise<void> {
    return this.runs.work('advisory-mysql');
  }

  @lock('memcached')
  @Cron(EVERY_SECOND)
  memcached(): Promise<void> {
    return this.runs.work('memcached');
  }

  @Cron(EVERY_SECOND)
  @lock('redis', { perRun: true })
  redisPerRun(): Promise<void> {
    return this.runs.work('redis-per-run');
  }

  /** Without lockAtLeastFor: the instance whose clock is ahead runs the tick, the others run it again. */
  @Cron(EVERY_SECOND)
  @lock('redis', { lockAtLeastFor: 0 })
  control(): Promise<void> {
    return this.runs.work('control');
  }
}

function appModule(): DynamicModule {
  const locks = DistributedLockModule.forRootAsync({ useFactory: async () => ({ strategies: await createAppStrategies(), defaultStrategy: 'redis' }) });
  const schedule = ScheduleModule.forRoot();
  @Module({ providers: [RunLog, Jobs] })
  class JobsModule {}
  return { module: JobsModule, imports: process.env.SCHEDULE_FIRST === '1' ? [schedule, locks] : [locks, schedule] };
}

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(appModule(), { logger: ['error', 'warn'] });
  await app.init();
  process.stdout.write('ready\n');
  process.once('SIGTERM', () => {
    void app.close().then(() => process.exit(0));
  });
  // Bounded: an instance nobody stops ends by itself.
  setTimeout(() => void app.close().then(() => process.exit(0)), 120_000).unref();
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
