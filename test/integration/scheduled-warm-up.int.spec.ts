import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Cron, ScheduleModule } from '@nestjs/schedule';
import { Test, type TestingModule } from '@nestjs/testing';
import { DataSource, type DataSourceOptions, type Logger as TypeOrmLogger } from 'typeorm';
import { DistributedLockModule, ScheduledLock, ScheduledLockEvents, type LockStrategy } from '@app/distributed-lock';
import { AdvisoryLockStrategy, PessimisticLockStrategy, RowLockStrategy } from '@app/distributed-lock/strategies/database';

const run = randomUUID().slice(0, 8);

/** Every statement TypeORM sends for the data source (its own at initialisation, the strategies' preparation). */
class StatementLog implements TypeOrmLogger {
  readonly statements: string[] = [];
  logQuery(query: string): void {
    this.statements.push(query);
  }
  logQueryError(): void {}
  logQuerySlow(): void {}
  logSchemaBuild(): void {}
  logMigration(): void {}
  log(): void {}
}

/** What initialising a data source and preparing a strategy on it send; no acquisition sends any of these. */
const PREPARATION = /version\(\)|information_schema|pg_catalog|CREATE (TABLE|SEQUENCE)/i;

// Found by the scheduled-jobs fault test (a tick run twice): a new instance's first fire paid for the
// strategy's pool and preparation (0.3–1.4 s with a dozen strategies in one process, against 10–150 ms
// for the next fires), took the job's lock after the instance that had run that fire on time let it go at
// the end of lockAtLeastFor, and ran the fire again. The strategies of @ScheduledLock jobs are now warmed at
// bootstrap, before the scheduler starts: the first fire costs what the next ones do.
describe.each([
  { name: 'MariaDB', options: (): DataSourceOptions => ({ type: 'mysql', url: process.env.LOCK_TEST_MYSQL_URL, poolSize: 4 }) },
  { name: 'PostgreSQL', options: (): DataSourceOptions => ({ type: 'postgres', url: process.env.LOCK_TEST_POSTGRES_URL, poolSize: 4 }) },
])('a @ScheduledLock job on $name: its strategy is ready before the first fire', ({ name, options }) => {
  it.each([
    { kind: 'row', make: (dataSource: DataSource): LockStrategy => new RowLockStrategy({ dataSource }) },
    { kind: 'pessimistic', make: (dataSource: DataSource): LockStrategy => new PessimisticLockStrategy({ dataSource }) },
    { kind: 'advisory', make: (dataSource: DataSource): LockStrategy => new AdvisoryLockStrategy({ dataSource }) },
  ])('$kind: the data source is initialised and the strategy prepared at bootstrap; the first fire sends none of it', async ({ kind, make }) => {
    const log = new StatementLog();
    // Not initialised, as a strategy's own pool (`connection`) is not until it is first used.
    const dataSource = new DataSource({ ...options(), logging: ['query'], logger: log });
    const job = `warm:${run}:${name}:${kind}`;

    @Injectable()
    class Jobs {
      @Cron('* * * * * *')
      @ScheduledLock({ name: job, lockAtMostFor: 3_000, lockAtLeastFor: 500 })
      async tick(): Promise<void> {}
    }

    let app: TestingModule | undefined;
    try {
      app = await Test.createTestingModule({
        imports: [ScheduleModule.forRoot(), DistributedLockModule.forRoot({ strategies: { default: make(dataSource) } })],
        providers: [Jobs],
      }).compile();
      const events = app.get(ScheduledLockEvents);
      const firstFire = new Promise<string>((resolve) => {
        events.once('started', () => resolve('started'));
        events.once('skipped', () => resolve('skipped'));
      });
      const firstRunEnded = new Promise<void>((resolve) => events.once('finished', () => resolve()));
      await app.init();
      // The scheduler has started; no timer of it has run yet.
      expect(dataSource.isInitialized).toBe(true);
      const atBootstrap = log.statements.length;
      expect(log.statements.some((sql) => PREPARATION.test(sql))).toBe(true);
      expect(await firstFire).toBe('started');
      expect(log.statements.slice(atBootstrap).filter((sql) => PREPARATION.test(sql))).toEqual([]);
      // Its lock kept by lockAtLeastFor goes back before the data source closes.
      await firstRunEnded;
    } finally {
      await app?.close();
      if (dataSource.isInitialized) await dataSource.destroy();
    }
  }, 20_000);
});
