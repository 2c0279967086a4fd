import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { InvalidLockOptionsError, LockManager, LockService } from '@app/distributed-lock';
import { RowLockStrategy, SEMAPHORE_TABLES } from '@app/distributed-lock/strategies/database';
import { sqliteDatabaseOf } from '../../libs/distributed-lock/src/strategies/database/sqlite-writer';
import { initializeDataSource } from '../support/initialize-data-source';

// The lock table's semaphores beyond the contract (test/contract/semaphore.contract.ts runs that on MariaDB,
// PostgreSQL and SQLite): what is particular to their tables and to SQLite's single writer.
const run = randomUUID().slice(0, 8);

describe('row semaphore (SQLite)', () => {
  const options: DataSourceOptions = { type: 'better-sqlite3', database: join(tmpdir(), `lock-row-semaphore-${run}.sqlite`), enableWAL: true, timeout: 10_000 };
  let manager: LockManager;
  let locks: LockService;
  /** Another connection to the same file (another process, as far as SQLite can tell). */
  let other: DataSource;

  beforeAll(async () => {
    manager = new LockManager(new RowLockStrategy({ connection: options }));
    locks = new LockService(manager);
    other = await initializeDataSource(options);
  });

  afterAll(async () => {
    await manager?.close();
    await other?.destroy();
  });

  it('tryAcquirePermit waits out another writer’s short transaction instead of saying "full"', async () => {
    const key = `busy:${run}`;
    // Makes the tables, then frees the place again.
    await (await locks.acquirePermit(key, { permits: 2 })).release();
    const db = sqliteDatabaseOf(other, 'test');
    // The other connection holds SQLite's single write lock for a moment.
    db.exec('BEGIN IMMEDIATE');
    const commit = setTimeout(() => db.exec('COMMIT'), 50);
    try {
      const permit = await locks.tryAcquirePermit(key, { permits: 2 });
      expect(permit?.isHeld).toBe(true);
      await permit?.release();
    } finally {
      clearTimeout(commit);
      if (db.inTransaction) db.exec('ROLLBACK');
    }
  });

  it('keeps one row per semaphore and one per permit held, in its own tables', async () => {
    const key = `rows:${run}`;
    const a = await locks.acquirePermit(key, { permits: 3 });
    const b = await locks.acquirePermit(key, { permits: 3, weight: 2 });
    expect(await other.query(`SELECT permits FROM ${SEMAPHORE_TABLES.semaphores} WHERE semaphore_key = ?`, [key])).toEqual([{ permits: 3 }]);
    expect(await other.query(`SELECT weight FROM ${SEMAPHORE_TABLES.permits} WHERE semaphore_key = ? ORDER BY weight`, [key])).toEqual([{ weight: 1 }, { weight: 2 }]);
    await Promise.all([a.release(), b.release()]);
  });
});

/** Whether `table` exists, as the database's catalog says. */
async function tableExists(dataSource: DataSource, table: string): Promise<boolean> {
  const type = dataSource.options.type;
  const sql =
    type === 'better-sqlite3'
      ? "SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?"
      : type === 'postgres'
        ? 'SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = $1'
        : 'SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?';
  return ((await dataSource.query(sql, [table])) as unknown[]).length === 1;
}

describe.each([
  { name: 'MariaDB', options: (): DataSourceOptions => ({ type: 'mysql', url: process.env.LOCK_TEST_MYSQL_URL }) },
  { name: 'PostgreSQL', options: (): DataSourceOptions => ({ type: 'postgres', url: process.env.LOCK_TEST_POSTGRES_URL }) },
  { name: 'SQLite', options: (): DataSourceOptions => ({ type: 'better-sqlite3', database: join(tmpdir(), `lock-row-semaphore-tables-${run}.sqlite`) }) },
])('row semaphore tables on $name', ({ options }) => {
  // Tables of this run only: the shared servers' default tables exist already.
  const tables = { leases: `leases_${run}`, semaphores: `semaphores_${run}`, permits: `permits_${run}` };
  let dataSource: DataSource;
  let manager: LockManager | undefined;

  beforeAll(async () => {
    dataSource = await initializeDataSource(options());
  });

  afterAll(async () => {
    await manager?.close();
    for (const table of Object.values(tables)) await dataSource?.query(`DROP TABLE IF EXISTS ${table}`);
    await dataSource?.destroy();
  });

  it('are not made by a strategy that only locks, and are made at its first permit', async () => {
    manager = new LockManager(new RowLockStrategy({ dataSource, table: tables.leases, semaphoreTables: { semaphores: tables.semaphores, permits: tables.permits } }));
    const locks = new LockService(manager);
    const lock = await locks.acquire(`tables:${run}`);
    expect(await lock.release()).toBe(true);
    expect(await tableExists(dataSource, tables.leases)).toBe(true);
    expect(await tableExists(dataSource, tables.semaphores)).toBe(false);
    expect(await tableExists(dataSource, tables.permits)).toBe(false);
    const permit = await locks.acquirePermit(`tables:${run}`, { permits: 2 });
    expect(await tableExists(dataSource, tables.semaphores)).toBe(true);
    expect(await tableExists(dataSource, tables.permits)).toBe(true);
    expect(await permit.release()).toBe(true);
  });
});

describe('row semaphore options', () => {
  it('refuses semaphore table names that are not plain SQL identifiers, and unknown keys, before any server is touched', () => {
    const connection = { type: 'mysql' as const, url: 'mysql://u:p@127.0.0.1:1/db' };
    expect(() => new RowLockStrategy({ connection, semaphoreTables: { permits: 'p; DROP TABLE x' } })).toThrow(InvalidLockOptionsError);
    expect(() => new RowLockStrategy({ connection, semaphoreTables: { semaphores: '' } })).toThrow(/plain SQL identifier/);
    expect(() => new RowLockStrategy({ connection, semaphoreTables: { permit: 'x' } as never })).toThrow(InvalidLockOptionsError);
  });
});
