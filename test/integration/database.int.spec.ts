import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource, EventSubscriber, QueryFailedError, type DataSourceOptions, type EntitySubscriberInterface, type UpdateEvent } from 'typeorm';
import {
  LockAcquireTimeoutError,
  LockBackendUnavailableError,
  type LockHandle,
  LockManager,
  LockService,
  runWithOptimisticRetry,
  VersionConflictError,
} from '@app/distributed-lock';
import { LOCK_TABLES, lockTransaction, optimisticUpdate, PessimisticLockStrategy, RowLockStrategy } from '@app/distributed-lock/strategies/database';
import { MysqlQueryRunner } from 'typeorm/driver/mysql/MysqlQueryRunner';
import { pessimisticStatements } from '@app/distributed-lock/strategies/database/pessimistic-lock.sql';
import { dialectOf, withServerFeatures } from '@app/distributed-lock/strategies/database/sql-dialect';
import { StockRow as Stock } from '../support/stock-row.entity';
import { PricedItem } from '../support/priced-item.entity';
import { expectCommitsWithRelease } from '../support/lock-transaction-check';
import { expectAbortedWaitEnded, expectNoWaitSentAfterAbort } from '../support/aborted-wait';
import { initializeDataSource } from '../support/initialize-data-source';


const run = randomUUID().slice(0, 8);
const mysql = (): DataSourceOptions => ({ type: 'mysql', url: process.env.LOCK_TEST_MYSQL_URL, entities: [Stock], synchronize: true, poolSize: 16 });
const sqlite = (): DataSourceOptions => ({ type: 'better-sqlite3', database: join(tmpdir(), `lock-it-${run}.sqlite`), entities: [Stock], synchronize: true, enableWAL: true, timeout: 10_000 });
const postgres = (): DataSourceOptions => ({ type: 'postgres', url: process.env.LOCK_TEST_POSTGRES_URL, entities: [Stock], synchronize: true, poolSize: 16 });

/** With 4 connections allowed and all pinned, the next acquisition waits for a slot, then fails naming the option. */
async function expectSlotLimit(locks: LockService, prefix: string): Promise<void> {
  const held = await Promise.all([0, 1, 2, 3].map((i) => locks.acquire(`${prefix}:pool:${i}`)));
  expect(await locks.tryAcquire(`${prefix}:pool:4`)).toBeNull();
  const error = await locks.acquire(`${prefix}:pool:4`, { waitTimeout: 300 }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(LockBackendUnavailableError);
  expect((error as Error).message).toMatch(/maxHeldConnections/);
  const waiting = locks.acquire(`${prefix}:pool:5`, { waitTimeout: 5_000 });
  await held[0].release();
  const fifth = await waiting;
  expect(fifth.isHeld).toBe(true);
  // Behind a waiter of this process for the same key (it has the last slot), a wait that ends is a timeout,
  // as it would be with more slots; a free key kept out by the slots alone still names the option.
  await held[1].release();
  const behindHolder = locks.acquire(`${prefix}:pool:2`, { waitTimeout: 5_000, reentrant: false }).catch((e: unknown) => e);
  // Time for it to take the last slot and wait on the row, also on a loaded machine.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const timedOut = await locks.acquire(`${prefix}:pool:2`, { waitTimeout: 300, reentrant: false }).catch((e: unknown) => e);
  expect(timedOut).toBeInstanceOf(LockAcquireTimeoutError);
  const keptOut = await locks.acquire(`${prefix}:pool:6`, { waitTimeout: 300 }).catch((e: unknown) => e);
  expect(keptOut).toBeInstanceOf(LockBackendUnavailableError);
  expect((keptOut as Error).message).toMatch(/maxHeldConnections/);
  await Promise.all([...held.slice(2), fifth].map((lock) => lock.release()));
  await ((await behindHolder) as LockHandle).release();
}

/** Runs `scenario` with a pessimistic strategy on a data source of its own, which its statements' watches leave with. */
async function withWaiterDataSource(options: DataSourceOptions, scenario: (dataSource: DataSource, strategy: PessimisticLockStrategy) => Promise<void>): Promise<void> {
  const waiterDataSource = await initializeDataSource(options);
  try {
    await scenario(waiterDataSource, new PessimisticLockStrategy({ dataSource: waiterDataSource }));
  } finally {
    await waiterDataSource.destroy();
  }
}

/** The aborted-wait scenario for a pessimistic waiter on a data source of its own (see `expectAbortedWaitEnded`). */
function expectAbortedWaitEndedOn(options: DataSourceOptions, holder: LockService, waitingStatement: RegExp, key: string): Promise<void> {
  return withWaiterDataSource(options, (waiterDataSource, strategy) => expectAbortedWaitEnded({ holder, strategy, waiterDataSource, waitingStatement, key }));
}

describe.each([
  ['MariaDB', mysql],
  ['SQLite', sqlite],
  ['PostgreSQL', postgres],
])('optimistic version column (%s)', (_name, options) => {
  let dataSource: DataSource;

  beforeAll(async () => {
    dataSource = await initializeDataSource(options());
  });

  afterAll(async () => {
    await dataSource?.destroy();
  });

  it('applies exactly N of N concurrent decrements: no lost update, never below zero', async () => {
    // Few buyers, each retrying on conflict: the conflicts, and so the work, grow with the square of their
    // number (40 buyers for 30 items ran past 5 s under a full run's load).
    const sku = `sku-${randomUUID().slice(0, 8)}`;
    await dataSource.getRepository(Stock).insert({ sku, quantity: 8 });
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
    const results = await Promise.all(Array.from({ length: 12 }, buy));
    const final = await dataSource.getRepository(Stock).findOneByOrFail({ sku });
    expect(results.filter(Boolean).length).toBe(8);
    expect(final.quantity).toBe(0);
    expect(final.version).toBe(9);
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

  it('reports the version another writer left, not the snapshot of the caller\'s transaction that read the row', async () => {
    const sku = `sku-${randomUUID().slice(0, 8)}`;
    await dataSource.getRepository(Stock).insert({ sku, quantity: 5 });
    const error = await dataSource
      .transaction(async (manager) => {
        const read = await manager.getRepository(Stock).findOneByOrFail({ sku });
        // Another writer, on another connection (on SQLite's single connection, inside this transaction).
        await dataSource.getRepository(Stock).update({ sku }, { quantity: 4 });
        await optimisticUpdate({ manager, entity: Stock, id: sku, expectedVersion: read.version, set: { quantity: read.quantity - 1 } });
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(VersionConflictError);
    expect(error).toMatchObject({ expectedVersion: 1, actualVersion: 2 });
  });

  it('rejects bad input with a typed error that names the field, before any statement', async () => {
    const sku = `sku-${randomUUID().slice(0, 8)}`;
    await dataSource.getRepository(Stock).insert({ sku, quantity: 5 });
    const base = { manager: dataSource.manager, entity: Stock, id: sku, expectedVersion: 1, set: { quantity: 4 } };
    const bad: Array<[string, Record<string, unknown>]> = [
      ['expectedVersion', { expectedVersion: '1' }],
      ['expectedVersion', { expectedVersion: Number.NaN }],
      ['expectedVersion', { expectedVersion: new Date('not a date') }],
      ['set', { set: null }],
      ['set', { set: [4] }],
      ['id', { id: undefined }],
      ['id', { id: [sku, 'other'] }], // several rows
      ['id', { id: {} }], // every row at that version
      ['manager', { manager: {} }],
    ];
    for (const [option, change] of bad) {
      await expect(optimisticUpdate({ ...base, ...change } as never)).rejects.toMatchObject({ name: 'InvalidLockOptionsError', option });
    }
    expect(await dataSource.getRepository(Stock).findOneByOrFail({ sku })).toMatchObject({ quantity: 5, version: 1 });
  });

  it('writes inside the caller\'s transaction: rolled back with it, committed with it', async () => {
    const sku = `sku-${randomUUID().slice(0, 8)}`;
    await dataSource.getRepository(Stock).insert({ sku, quantity: 5 });
    await expect(
      dataSource.transaction(async (manager) => {
        await optimisticUpdate({ manager, entity: Stock, id: sku, expectedVersion: 1, set: { quantity: 4 } });
        expect(await manager.getRepository(Stock).findOneByOrFail({ sku })).toMatchObject({ quantity: 4, version: 2 });
        throw new Error('payment declined');
      }),
    ).rejects.toThrow('payment declined');
    expect(await dataSource.getRepository(Stock).findOneByOrFail({ sku })).toMatchObject({ quantity: 5, version: 1 });
    await dataSource.transaction((manager) => optimisticUpdate({ manager, entity: Stock, id: sku, expectedVersion: 1, set: { quantity: 3 } }));
    expect(await dataSource.getRepository(Stock).findOneByOrFail({ sku })).toMatchObject({ quantity: 3, version: 2 });
  });
});

/**
 * On MySQL/MariaDB without subscribers or query logging, `optimisticUpdate` sends its UPDATE straight to
 * the mysql2 pool (the query builder cost 140–165 µs more per update here). These tests hold it to writing what
 * the query builder writes, inside the caller's transaction, and to stepping aside for subscribers.
 */
describe('optimisticUpdate straight to the mysql2 pool (MariaDB)', () => {
  const itemOptions = (): DataSourceOptions => ({ type: 'mysql', url: process.env.LOCK_TEST_MYSQL_URL, entities: [PricedItem], synchronize: true, poolSize: 4 });
  let direct: DataSource;
  let logged: string[];
  let throughTypeOrm: DataSource;

  const fresh = (id: string): PricedItem =>
    Object.assign(new PricedItem(), { id, name: 'mug', price: 4.5, meta: { colour: 'red', sizes: [1] }, tags: ['a'], onSale: false, restockAt: null, revision: 0 });

  beforeAll(async () => {
    direct = await initializeDataSource(itemOptions());
    logged = [];
    throughTypeOrm = await initializeDataSource({
      ...itemOptions(),
      synchronize: false,
      logging: ['query'],
      logger: { logQuery: (query: string) => logged.push(query), logQueryError: () => undefined, logQuerySlow: () => undefined, logSchemaBuild: () => undefined, logMigration: () => undefined, log: () => undefined },
    } as DataSourceOptions);
  });

  afterAll(async () => {
    await direct?.destroy();
    await throughTypeOrm?.destroy();
  });

  it('writes exactly what the query builder writes: prepared values, version and update date bumped', async () => {
    const [a, b] = [`direct-${randomUUID().slice(0, 8)}`, `builder-${randomUUID().slice(0, 8)}`];
    await direct.getRepository(PricedItem).insert([fresh(a), fresh(b)]);
    const set = { name: 'big mug', price: 12.25, meta: { colour: 'blue', sizes: [2, 3] }, tags: ['x', 'y'], onSale: true, restockAt: new Date('2026-12-01T10:00:00.123Z') };
    const builder = vi.spyOn(direct.manager, 'createQueryBuilder');
    await optimisticUpdate({ manager: direct.manager, entity: PricedItem, id: a, expectedVersion: 1, set });
    expect(builder).not.toHaveBeenCalled();
    builder.mockRestore();
    await optimisticUpdate({ manager: throughTypeOrm.manager, entity: PricedItem, id: b, expectedVersion: 1, set });
    expect(logged.filter((query) => query.startsWith('UPDATE'))).toHaveLength(1);
    const [rowA, rowB] = await Promise.all([a, b].map((id) => direct.getRepository(PricedItem).findOneByOrFail({ id })));
    const { id: _a, updatedAt: updatedA, ...valuesA } = rowA;
    const { id: _b, updatedAt: updatedB, ...valuesB } = rowB;
    expect(valuesA).toEqual(valuesB);
    expect(valuesA).toMatchObject({ ...set, version: 2, revision: 0 });
    // Both set it to CURRENT_TIMESTAMP: whole seconds, as TypeORM's update builder writes it (the column
    // keeps milliseconds, which the insert's default filled in).
    expect(updatedA).toBeInstanceOf(Date);
    expect([updatedA.getMilliseconds(), updatedB.getMilliseconds()]).toEqual([0, 0]);
    expect(Math.abs(updatedA.getTime() - updatedB.getTime())).toBeLessThan(60_000);
  });

  it('fails with TypeORM\'s QueryFailedError, as through the query builder', async () => {
    const id = `fails-${randomUUID().slice(0, 8)}`;
    await direct.getRepository(PricedItem).insert(fresh(id));
    const tooLong = { name: 'x'.repeat(100) }; // the column is VARCHAR(64), the server in strict mode
    const viaDirect = await optimisticUpdate({ manager: direct.manager, entity: PricedItem, id, expectedVersion: 1, set: tooLong }).catch((e: unknown) => e);
    const viaBuilder = await optimisticUpdate({ manager: throughTypeOrm.manager, entity: PricedItem, id, expectedVersion: 1, set: tooLong }).catch((e: unknown) => e);
    expect(viaDirect).toBeInstanceOf(QueryFailedError);
    expect(viaBuilder).toBeInstanceOf(QueryFailedError);
    const code = (error: unknown): unknown => ((error as QueryFailedError).driverError as Error & { code?: string }).code;
    expect(code(viaDirect)).toBe(code(viaBuilder));
    expect(code(viaDirect)).toBe('ER_DATA_TOO_LONG');
  });

  it('checks and bumps another version property, the @VersionColumn too, like the query builder', async () => {
    const id = `revision-${randomUUID().slice(0, 8)}`;
    await direct.getRepository(PricedItem).insert(fresh(id));
    await optimisticUpdate({ manager: direct.manager, entity: PricedItem, id, expectedVersion: 0, versionProperty: 'revision', set: { price: 5 } });
    expect(await direct.getRepository(PricedItem).findOneByOrFail({ id })).toMatchObject({ price: 5, revision: 1, version: 2 });
    const stale = await optimisticUpdate({ manager: direct.manager, entity: PricedItem, id, expectedVersion: 0, versionProperty: 'revision', set: { price: 6 } }).catch((e: unknown) => e);
    expect(stale).toMatchObject({ name: 'VersionConflictError', expectedVersion: 0, actualVersion: 1 });
  });

  it('runs inside the caller\'s transaction: rolled back with it, committed with it', async () => {
    const id = `tx-${randomUUID().slice(0, 8)}`;
    await direct.getRepository(PricedItem).insert(fresh(id));
    await expect(
      direct.transaction(async (manager) => {
        await optimisticUpdate({ manager, entity: PricedItem, id, expectedVersion: 1, set: { name: 'rolled back' } });
        // Inside the transaction the change is visible; outside it is not yet.
        expect(await manager.getRepository(PricedItem).findOneByOrFail({ id })).toMatchObject({ name: 'rolled back', version: 2 });
        expect(await direct.getRepository(PricedItem).findOneByOrFail({ id })).toMatchObject({ name: 'mug', version: 1 });
        throw new Error('payment declined');
      }),
    ).rejects.toThrow('payment declined');
    expect(await direct.getRepository(PricedItem).findOneByOrFail({ id })).toMatchObject({ name: 'mug', version: 1 });
    await direct.transaction((manager) => optimisticUpdate({ manager, entity: PricedItem, id, expectedVersion: 1, set: { name: 'kept' } }));
    expect(await direct.getRepository(PricedItem).findOneByOrFail({ id })).toMatchObject({ name: 'kept', version: 2 });
  });

  it('with fastPaths: false, always goes through the query builder', async () => {
    const id = `public-${randomUUID().slice(0, 8)}`;
    await direct.getRepository(PricedItem).insert(fresh(id));
    const builder = vi.spyOn(direct.manager, 'createQueryBuilder');
    try {
      await optimisticUpdate({ manager: direct.manager, entity: PricedItem, id, expectedVersion: 1, set: { name: 'public' }, fastPaths: false });
      expect(builder).toHaveBeenCalledTimes(1);
    } finally {
      builder.mockRestore();
    }
    expect(await direct.getRepository(PricedItem).findOneByOrFail({ id })).toMatchObject({ name: 'public', version: 2 });
    const stale = await optimisticUpdate({ manager: direct.manager, entity: PricedItem, id, expectedVersion: 1, set: { name: 'stale' }, fastPaths: false }).catch((e: unknown) => e);
    expect(stale).toMatchObject({ name: 'VersionConflictError', expectedVersion: 1, actualVersion: 2 });
  });

  it('steps aside for subscribers, which hear every query-builder update', async () => {
    const heard: unknown[] = [];
    @EventSubscriber()
    class UpdateListener implements EntitySubscriberInterface<PricedItem> {
      listenTo(): typeof PricedItem {
        return PricedItem;
      }
      afterUpdate(event: UpdateEvent<PricedItem>): void {
        heard.push(event.entity);
      }
    }
    const withSubscriber = await initializeDataSource({ ...itemOptions(), synchronize: false, subscribers: [UpdateListener] });
    try {
      const id = `sub-${randomUUID().slice(0, 8)}`;
      await withSubscriber.getRepository(PricedItem).insert(fresh(id));
      await optimisticUpdate({ manager: withSubscriber.manager, entity: PricedItem, id, expectedVersion: 1, set: { name: 'heard' } });
      expect(heard).toEqual([expect.objectContaining({ name: 'heard' })]);
    } finally {
      await withSubscriber.destroy();
    }
  });
});

describe('pessimistic strategy (MariaDB)', () => {
  let dataSource: DataSource;
  let strategy: PessimisticLockStrategy;
  let locks: LockService;
  let manager: LockManager;

  beforeAll(async () => {
    dataSource = await initializeDataSource(mysql());
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
    await expectCommitsWithRelease(dataSource, locks, 'pess');
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

  it('starts and commits its transaction straight, as TypeORM would: a save through the lock joins it, a nested transaction takes a savepoint', async () => {
    const sku = `pess-tx-${randomUUID().slice(0, 8)}`;
    const typeOrmStarts = vi.spyOn(MysqlQueryRunner.prototype, 'startTransaction');
    try {
      await locks.withLock(`stock:${sku}`, async (lock) => {
        const inLock = lockTransaction(lock).getRepository(Stock);
        // save() opens a transaction of its own unless the runner says one is active: that START
        // TRANSACTION would commit the lock's transaction and drop its row lock, unseen.
        await inLock.save(Object.assign(new Stock(), { sku, quantity: 5 }));
        await lockTransaction(lock)
          .transaction(async (nested) => {
            await nested.getRepository(Stock).update({ sku }, { quantity: 1 });
            throw new Error('nested step failed');
          })
          .catch(() => undefined);
        expect((await inLock.findOneByOrFail({ sku })).quantity).toBe(5); // only the savepoint rolled back
        expect(await dataSource.getRepository(Stock).findOneBy({ sku })).toBeNull(); // nothing committed yet
      });
      expect((await dataSource.getRepository(Stock).findOneByOrFail({ sku })).quantity).toBe(5);
      // TypeORM's own startTransaction ran once: for the nested transaction, not for the lock's.
      expect(typeOrmStarts).toHaveBeenCalledTimes(1);
    } finally {
      typeOrmStarts.mockRestore();
    }
  });

  it('leaves its transaction to TypeORM when subscribers listen: they hear it start and commit', async () => {
    const heard: string[] = [];
    @EventSubscriber()
    class TransactionListener implements EntitySubscriberInterface {
      beforeTransactionStart(): void {
        heard.push('start');
      }
      afterTransactionCommit(): void {
        heard.push('commit');
      }
    }
    const withSubscriber = await initializeDataSource({ ...mysql(), synchronize: false, subscribers: [TransactionListener] });
    const subscribed = new LockManager(new PessimisticLockStrategy({ dataSource: withSubscriber, name: 'pessimistic-subscribed' }));
    try {
      const lock = await new LockService(subscribed).acquire(`pess:${run}:subscribed`);
      expect(heard).toEqual(['start']);
      await lock.release();
      expect(heard).toEqual(['start', 'commit']);
    } finally {
      await subscribed.close();
      await withSubscriber.destroy();
    }
  });

  it('ends the row lock\'s wait on the server before an aborted acquire() rejects, also when the cancel reached the server before the wait did', async () => {
    await expectAbortedWaitEndedOn(mysql(), locks, /FOR UPDATE WAIT/, `pess:${run}:cancel-first`);
  }, 15_000);

  it('bounds the insert of a new key\'s row on the server by the wait, as the row lock (a cancel can come too early)', async () => {
    const dialect = await withServerFeatures(dataSource, dialectOf(dataSource, 'pessimistic'));
    const sql = pessimisticStatements(dialect, LOCK_TABLES.rows, LOCK_TABLES.fences);
    const key = `pess:${run}:insert-bound`;
    // The strategy makes its tables on first use.
    await (await locks.acquire(`${key}:first-use`)).release();
    // Another caller's insert of the same key, not committed yet: the duplicate check waits for its lock.
    const other = dataSource.createQueryRunner();
    await other.connect();
    await other.startTransaction();
    try {
      await other.query(sql.insertRow(1), [key]);
      const error = await dataSource.query(sql.insertRow(1), [key]).catch((e: unknown) => e);
      expect((error as { driverError?: { errno?: number } }).driverError?.errno).toBe(1205);
    } finally {
      await other.rollbackTransaction();
      await other.release();
    }
  });

  it('sends no insert of a new key\'s row once the caller gave up during the read before it (the insert can wait behind a lock)', async () => {
    await withWaiterDataSource(mysql(), (waiterDataSource, strategy) =>
      expectNoWaitSentAfterAbort({ strategy, waiterDataSource, heldStatement: /^SELECT 1 AS present/, waitingStatement: /^INSERT|^SET STATEMENT/, key: `pess:${run}:no-insert` }),
    );
  }, 15_000);

  it('never pins more connections than allowed: the next waits for a slot, then fails saying what to change', async () => {
    await expectSlotLimit(locks, `pess:${run}`);
  });
});

/**
 * `SELECT … FOR UPDATE` on PostgreSQL: the same lock through TypeORM's public API (the mysql2 fast paths do
 * not apply), its wait bounded by `SET LOCAL lock_timeout` inside the lock's transaction.
 */
describe('pessimistic strategy (PostgreSQL)', () => {
  let dataSource: DataSource;
  let locks: LockService;
  let manager: LockManager;

  beforeAll(async () => {
    dataSource = await initializeDataSource(postgres());
    manager = new LockManager(new PessimisticLockStrategy({ dataSource, maxHeldConnections: 4, name: 'pessimistic-pg' }));
    locks = new LockService(manager);
  });

  afterAll(async () => {
    await manager?.close();
    await dataSource?.destroy();
  });

  it('locks a row, never the table, and commits writes made through the lock with the release (rolled back on failure)', async () => {
    const other = await locks.acquire(`pg:${run}:other`);
    const started = Date.now();
    const next = await locks.acquire(`pg:${run}:next`, { waitTimeout: 5_000 });
    expect(Date.now() - started).toBeLessThan(1_000);
    await Promise.all([other.release(), next.release()]);
    await expectCommitsWithRelease(dataSource, locks, 'pg');
  });

  it('bounds the row lock\'s wait on the server with lock_timeout, in ms, inside the lock\'s transaction only', async () => {
    const key = `pg:${run}:timeout`;
    const holder = await locks.acquire(key);
    const runner = dataSource.createQueryRunner();
    try {
      // What a waiter sends, on a connection of its own: the transaction-local timeout ends its wait with 55P03.
      await runner.startTransaction();
      await runner.query("SELECT set_config('lock_timeout', $1, true)", ['150ms']);
      const started = Date.now();
      const error = await runner.query(`SELECT lock_key FROM ${LOCK_TABLES.rows} WHERE lock_key = $1 FOR UPDATE`, [key]).catch((e: unknown) => e);
      expect((error as QueryFailedError).driverError).toMatchObject({ code: '55P03' });
      expect(Date.now() - started).toBeLessThan(1_000);
      await runner.rollbackTransaction();
      expect((await runner.query("SELECT current_setting('lock_timeout') AS t")) as unknown).toEqual([{ t: '0' }]);
    } finally {
      await runner.release();
    }
    const waited = Date.now();
    await expect(locks.acquire(key, { waitTimeout: 250 })).rejects.toMatchObject({ name: 'LockAcquireTimeoutError' });
    expect(Date.now() - waited).toBeLessThan(1_500);
    await holder.release();
  });

  it('makes the lock row again when it was deleted after we saw it (a clean-up job)', async () => {
    const key = `pg:${run}:deleted-row`;
    await (await locks.acquire(key)).release();
    await dataSource.query(`DELETE FROM ${LOCK_TABLES.rows} WHERE lock_key = $1`, [key]);
    const again = await locks.acquire(key, { waitTimeout: 5_000 });
    expect(await locks.tryAcquire(key, { reentrant: false })).toBeNull();
    await again.release();
  });

  it('ends the row lock\'s wait on the server before an aborted acquire() rejects, also when the cancel reached the server before the wait did', async () => {
    // The row lock that waits: the statement that sets the wait's lock_timeout, then locks the row.
    await expectAbortedWaitEndedOn(postgres(), locks, /FOR UPDATE\) AS r$/, `pg:${run}:cancel-first`);
  }, 15_000);

  // The statement before the row lock is the transaction's start (the wait's lock_timeout, a statement of
  // its own before, is now set by the row lock's own statement).
  it('sends no row lock once the caller gave up while its transaction was being started', async () => {
    await withWaiterDataSource(postgres(), (waiterDataSource, strategy) =>
      expectNoWaitSentAfterAbort({ holder: locks, strategy, waiterDataSource, heldStatement: /^START TRANSACTION$/, waitingStatement: /FOR UPDATE\) AS r$/, key: `pg:${run}:no-wait` }),
    );
  }, 15_000);

  it('never pins more connections than allowed: the next waits for a slot, then fails saying what to change', async () => {
    await expectSlotLimit(locks, `pg:${run}`);
  });
});

/**
 * On MySQL/MariaDB the strategies send their own statements straight to the data source's mysql2 pool
 * (TypeORM's query runner cost about 65 µs per statement). With query logging on, the pessimistic lock's
 * START TRANSACTION and COMMIT go through TypeORM and show in the log; writes through the lock's
 * EntityManager commit with the release either way.
 */
describe('database strategies: statements straight to the mysql2 pool (MariaDB)', () => {
  let dataSource: DataSource;
  const logged: string[] = [];

  beforeAll(async () => {
    dataSource = await initializeDataSource({
      ...mysql(),
      logging: ['query'],
      logger: { logQuery: (query: string) => logged.push(query), logQueryError: () => undefined, logQuerySlow: () => undefined, logSchemaBuild: () => undefined, logMigration: () => undefined, log: () => undefined },
    } as DataSourceOptions);
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

  it('pessimistic strategy: with query logging on, only the transaction goes through TypeORM, and a write through the lock commits with the release', async () => {
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

  it('row strategy with fastPaths: false: every statement goes through TypeORM\'s query runner', async () => {
    const manager = new LockManager(new RowLockStrategy({ dataSource, name: 'row-public-api', fastPaths: false }));
    try {
      const locks = new LockService(manager);
      await (await locks.acquire(`public-row:${run}`)).release();
      logged.length = 0;
      const lock = await locks.acquire(`public-row:${run}`);
      expect(lock.fencingToken).toBeGreaterThan(0);
      expect(await lock.release()).toBe(true);
      expect(logged.filter((query) => query.includes(LOCK_TABLES.leases)).length).toBeGreaterThanOrEqual(2);
    } finally {
      await manager.close();
    }
  });

  it('pessimistic strategy with fastPaths: false: its statements go through TypeORM too, and a write through the lock commits with the release', async () => {
    const manager = new LockManager(new PessimisticLockStrategy({ dataSource, name: 'pessimistic-public-api', fastPaths: false }));
    try {
      const locks = new LockService(manager);
      const sku = `public-${randomUUID().slice(0, 8)}`;
      await dataSource.getRepository(Stock).insert({ sku, quantity: 3 });
      await (await locks.acquire(`public-pessimistic:${run}`)).release();
      logged.length = 0;
      const lock = await locks.acquire(`public-pessimistic:${run}`);
      await lockTransaction(lock).getRepository(Stock).update({ sku }, { quantity: 2 });
      expect(await lock.release()).toBe(true);
      expect(logged.some((query) => /FOR UPDATE/.test(query))).toBe(true);
      expect(logged.some((query) => /fencing_token/.test(query))).toBe(true);
      expect(logged).toEqual(expect.arrayContaining(['START TRANSACTION', 'COMMIT']));
      expect((await dataSource.getRepository(Stock).findOneByOrFail({ sku })).quantity).toBe(2);
    } finally {
      await manager.close();
    }
  });
});
