import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { LockManager, LockService, LockTableMissingError } from '@app/distributed-lock';
import { RowLockStrategy } from '@app/distributed-lock/strategies/database';
import { initializeDataSource } from '../support/initialize-data-source';

const run = randomUUID().slice(0, 8);

/**
 * Tables made by hand (`ensureTable: false`) with one left out, as when upgrading to a version whose lock table
 * has a queue of waiters: the first acquisition says which table is missing and what to do, at once, rather
 * than "check that the server is up" after its wait.
 */
describe.each<[string, () => DataSourceOptions]>([
  ['MariaDB', () => ({ type: 'mysql', url: process.env.LOCK_TEST_MYSQL_URL })],
  ['PostgreSQL', () => ({ type: 'postgres', url: process.env.LOCK_TEST_POSTGRES_URL })],
  ['SQLite', () => ({ type: 'better-sqlite3', database: join(tmpdir(), `lock-missing-${run}.sqlite`) })],
])('lock table with a table missing (%s)', (_name, options) => {
  let dataSource: DataSource;
  const table = `missing_${run}_leases`;
  beforeAll(async () => {
    dataSource = await initializeDataSource(options());
    // The lock table and its queue, made the way the strategy makes them; then the queue is dropped.
    const maker = new LockManager(new RowLockStrategy({ dataSource, table, queueTable: `${table}_queue` }));
    await new LockService(maker).withLock(`made:${run}`, async () => undefined);
    await maker.close();
    await dataSource.query(`DROP TABLE ${table}_queue`);
    // A queue table that stays, for the case where the lock table is the one missing.
    const other = new LockManager(new RowLockStrategy({ dataSource, table, queueTable: `${table}_kept` }));
    await new LockService(other).withLock(`made:${run}`, async () => undefined);
    await other.close();
  });
  afterAll(async () => {
    for (const made of [table, `${table}_kept`, `${table}_clock`]) await dataSource.query(`DROP TABLE IF EXISTS ${made}`);
    await dataSource.destroy();
  });

  it('acquire fails at once with LockTableMissingError naming the queue table, not after its wait', async () => {
    const locks = new LockService(new LockManager(new RowLockStrategy({ dataSource, table, queueTable: `${table}_queue`, ensureTable: false })));
    const started = Date.now();
    const error = await locks.acquire(`k:${run}`, { waitTimeout: 10_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockTableMissingError);
    expect(error).toMatchObject({ table: `${table}_queue`, operation: 'acquire', key: `k:${run}` });
    expect((error as Error).message).toContain('docs/migration.md');
    expect(Date.now() - started).toBeLessThan(5_000);
    await expect(locks.tryAcquire(`k:${run}`)).rejects.toBeInstanceOf(LockTableMissingError);
  });

  it('names the lock table itself when that is the one missing', async () => {
    const locks = new LockService(new LockManager(new RowLockStrategy({ dataSource, table: `absent_${run}`, queueTable: `${table}_kept`, ensureTable: false })));
    const error = await locks.tryAcquire(`k:${run}`).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockTableMissingError);
    expect(error).toMatchObject({ table: `absent_${run}` });
  });
});
