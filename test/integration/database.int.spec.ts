import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource, type DataSourceOptions } from 'typeorm';
import {
  LockBackendUnavailableError,
  LockManager,
  LockService,
  runWithOptimisticRetry,
  VersionConflictError,
} from '@app/distributed-lock';
import { LOCK_TABLES, lockTransaction, optimisticUpdate, PessimisticLockStrategy, RowLockStrategy } from '@app/distributed-lock/strategies/database';
import { StockRow as Stock } from '../support/stock-row.entity';


const run = randomUUID().slice(0, 8);
const mysql = (): DataSourceOptions => ({ type: 'mysql', url: process.env.LOCK_TEST_MYSQL_URL, entities: [Stock], synchronize: true, poolSize: 16 });
const sqlite = (): DataSourceOptions => ({ type: 'better-sqlite3', database: join(tmpdir(), `lock-it-${run}.sqlite`), entities: [Stock], synchronize: true, enableWAL: true, timeout: 10_000 });

describe.each([
  ['MariaDB', mysql],
  ['SQLite', sqlite],
])('optimistic version column (%s)', (_name, options) => {
  let dataSource: DataSource;

  beforeAll(async () => {
    dataSource = await new DataSource(options()).initialize();
  });

  afterAll(async () => {
    await dataSource?.destroy();
  });

  it('applies exactly N of N concurrent decrements: no lost update, never below zero', async () => {
    const sku = `sku-${randomUUID().slice(0, 8)}`;
    await dataSource.getRepository(Stock).insert({ sku, quantity: 30 });
    let conflicts = 0;
    const buy = (): Promise<boolean> =>
      runWithOptimisticRetry(
        async () => {
          const row = await dataSource.getRepository(Stock).findOneByOrFail({ sku });
          if (row.quantity <= 0) return false;
          await optimisticUpdate({ manager: dataSource.manager, entity: Stock, id: sku, expectedVersion: row.version, set: { quantity: row.quantity - 1 } });
          return true;
        },
        { retries: 200, backoff: { initialDelay: 1, maxDelay: 10 }, onConflict: () => (conflicts += 1) },
      );
    const results = await Promise.all(Array.from({ length: 40 }, buy));
    const final = await dataSource.getRepository(Stock).findOneByOrFail({ sku });
    expect(results.filter(Boolean).length).toBe(30);
    expect(final.quantity).toBe(0);
    expect(final.version).toBe(31);
    expect(conflicts).toBeGreaterThan(0);
  });

  it('throws VersionConflictError with the expected and actual version', async () => {
    const sku = `sku-${randomUUID().slice(0, 8)}`;
    await dataSource.getRepository(Stock).insert({ sku, quantity: 5 });
    await optimisticUpdate({ manager: dataSource.manager, entity: Stock, id: sku, expectedVersion: 1, set: { quantity: 4 } });
    const error = await optimisticUpdate({ manager: dataSource.manager, entity: Stock, id: sku, expectedVersion: 1, set: { quantity: 3 } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(VersionConflictError);
    expect(error).toMatchObject({ entity: 'StockRow', expectedVersion: 1, actualVersion: 2 });
  });
});

describe('pessimistic strategy (MariaDB)', () => {
  let dataSource: DataSource;
  let strategy: PessimisticLockStrategy;
  let locks: LockService;
  let manager: LockManager;

  beforeAll(async () => {
    dataSource = await new DataSource(mysql()).initialize();
    strategy = new PessimisticLockStrategy({ dataSource, maxHeldConnections: 4 });
    manager = new LockManager(strategy);
    locks = new LockService(manager);
  });

  afterAll(async () => {
    await manager?.close();
    await dataSource?.destroy();
  });

  it('locks a row, never the table: two different keys never block each other', async () => {
    const a = await locks.acquire(`pess:${run}:a`);
    const started = Date.now();
    const b = await locks.acquire(`pess:${run}:b`, { waitTimeout: 5_000 });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(await locks.tryAcquire(`pess:${run}:a`, { reentrant: false })).toBeNull();
    await Promise.all([a.release(), b.release()]);
  });

  it('commits writes made through the lock’s transaction with the release, and rolls them back on failure', async () => {
    const sku = `pess-${randomUUID().slice(0, 8)}`;
    await dataSource.getRepository(Stock).insert({ sku, quantity: 10 });
    await locks.withLock(`stock:${sku}`, async (lock) => {
      await lockTransaction(lock).getRepository(Stock).decrement({ sku }, 'quantity', 1);
      // Not visible outside the lock's transaction before the release.
      expect((await dataSource.getRepository(Stock).findOneByOrFail({ sku })).quantity).toBe(10);
    });
    expect((await dataSource.getRepository(Stock).findOneByOrFail({ sku })).quantity).toBe(9);
    await expect(
      locks.withLock(`stock:${sku}`, async (lock) => {
        await lockTransaction(lock).getRepository(Stock).decrement({ sku }, 'quantity', 5);
        throw new Error('payment declined');
      }),
    ).rejects.toThrow('payment declined');
    expect((await dataSource.getRepository(Stock).findOneByOrFail({ sku })).quantity).toBe(9);
  });

  it('makes the lock row again when it was deleted after we saw it (a clean-up job)', async () => {
    const key = `pess:${run}:deleted-row`;
    await (await locks.acquire(key)).release();
    await dataSource.query(`DELETE FROM ${LOCK_TABLES.rows} WHERE lock_key = ?`, [key]);
    const again = await locks.acquire(key, { waitTimeout: 5_000 });
    expect(again.isHeld).toBe(true);
    expect(await locks.tryAcquire(key, { reentrant: false })).toBeNull(); // the new row is really locked
    await again.release();
    expect(await dataSource.query(`SELECT lock_key FROM ${LOCK_TABLES.rows} WHERE lock_key = ?`, [key])).toHaveLength(1);
  });

  it('never pins more connections than allowed: the next waits for a slot, then fails saying what to change', async () => {
    const held = await Promise.all([0, 1, 2, 3].map((i) => locks.acquire(`pess:${run}:pool:${i}`)));
    expect(await locks.tryAcquire(`pess:${run}:pool:4`)).toBeNull();
    const error = await locks.acquire(`pess:${run}:pool:4`, { waitTimeout: 300 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockBackendUnavailableError);
    expect((error as Error).message).toMatch(/maxHeldConnections/);
    const waiting = locks.acquire(`pess:${run}:pool:5`, { waitTimeout: 5_000 });
    await held[0].release();
    const fifth = await waiting;
    expect(fifth.isHeld).toBe(true);
    await Promise.all([...held.slice(1), fifth].map((lock) => lock.release()));
  });
});

/**
 * On MySQL/MariaDB the strategies send their own statements straight to the data source's mysql2 pool
 * (TypeORM's query runner cost about 65 µs per statement); TypeORM still runs the pessimistic lock's
 * transaction, so writes through the lock's EntityManager commit with the release.
 */
describe('database strategies: statements straight to the mysql2 pool (MariaDB)', () => {
  let dataSource: DataSource;
  const logged: string[] = [];

  beforeAll(async () => {
    dataSource = await new DataSource({
      ...mysql(),
      logging: ['query'],
      logger: { logQuery: (query: string) => logged.push(query), logQueryError: () => undefined, logQuerySlow: () => undefined, logSchemaBuild: () => undefined, logMigration: () => undefined, log: () => undefined },
    } as DataSourceOptions).initialize();
  });

  afterAll(async () => {
    await dataSource?.destroy();
  });

  it('row strategy: takes and frees a lock with none of its statements through the query runner', async () => {
    const manager = new LockManager(new RowLockStrategy({ dataSource, name: 'row-direct' }));
    try {
      const locks = new LockService(manager);
      await (await locks.acquire(`direct-row:${run}`)).release(); // creates the table and the key's row
      logged.length = 0;
      const lock = await locks.acquire(`direct-row:${run}`);
      expect(lock.fencingToken).toBeGreaterThan(0);
      expect(await lock.release()).toBe(true);
      expect(logged).toEqual([]);
    } finally {
      await manager.close();
    }
  });

  it('pessimistic strategy: only the transaction goes through TypeORM, and a write through the lock commits with the release', async () => {
    const manager = new LockManager(new PessimisticLockStrategy({ dataSource, name: 'pessimistic-direct' }));
    try {
      const locks = new LockService(manager);
      const sku = `direct-${randomUUID().slice(0, 8)}`;
      await dataSource.getRepository(Stock).insert({ sku, quantity: 3 });
      await (await locks.acquire(`direct-pessimistic:${run}`)).release();
      logged.length = 0;
      const lock = await locks.acquire(`direct-pessimistic:${run}`);
      await lockTransaction(lock).getRepository(Stock).update({ sku }, { quantity: 2 });
      expect(await lock.release()).toBe(true);
      expect(logged.filter((query) => /FOR UPDATE|fencing_token/.test(query))).toEqual([]);
      expect(logged).toEqual(expect.arrayContaining(['START TRANSACTION', 'COMMIT']));
      expect((await dataSource.getRepository(Stock).findOneByOrFail({ sku })).quantity).toBe(2);
    } finally {
      await manager.close();
    }
  });
});
