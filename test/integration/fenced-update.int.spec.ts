import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { FencedWriteRefusedError, LockManager, LockService } from '@app/distributed-lock';
import { fencedUpdate, RowLockStrategy } from '@app/distributed-lock/strategies/database';
import { FencedBin } from '../support/fenced-bin.entity';
import { FencedLedger } from '../support/fenced-ledger.entity';
import { FencedStock } from '../support/fenced-stock.entity';
import { initializeDataSource } from '../support/initialize-data-source';

const run = randomUUID().slice(0, 8);
const mysql = (): DataSourceOptions => ({ type: 'mysql', url: process.env.LOCK_TEST_MYSQL_URL, entities: [FencedStock, FencedBin, FencedLedger], synchronize: true, poolSize: 4 });
const sqlite = (): DataSourceOptions => ({ type: 'better-sqlite3', database: join(tmpdir(), `fenced-${run}.sqlite`), entities: [FencedStock, FencedBin, FencedLedger], synchronize: true, enableWAL: true, timeout: 10_000 });
const postgres = (): DataSourceOptions => ({ type: 'postgres', url: process.env.LOCK_TEST_POSTGRES_URL, entities: [FencedStock, FencedBin, FencedLedger], synchronize: true, poolSize: 4 });

describe.each([
  ['MariaDB', mysql],
  ['SQLite', sqlite],
  ['PostgreSQL', postgres],
])('fencedUpdate (%s)', (_name, options) => {
  let dataSource: DataSource;
  const newRow = async (quantity: number): Promise<string> => {
    const sku = `sku-${randomUUID().slice(0, 8)}`;
    await dataSource.getRepository(FencedStock).insert({ sku, quantity, lastFence: 0 });
    return sku;
  };
  const rowOf = async (sku: string): Promise<{ quantity: number; lastFence: number }> => {
    const row = await dataSource.getRepository(FencedStock).findOneByOrFail({ sku });
    return { quantity: row.quantity, lastFence: Number(row.lastFence) };
  };
  const write = (sku: string, token: number, seenFence: number | string, quantity: number): Promise<void> =>
    fencedUpdate({ manager: dataSource.manager, entity: FencedStock, id: sku, token, seenFence, fenceProperty: 'lastFence', set: { quantity } });

  beforeAll(async () => {
    dataSource = await initializeDataSource(options());
  });

  afterAll(async () => {
    await dataSource?.destroy();
  });

  it('writes the change and the token, taking the fence as read (a bigint string too)', async () => {
    const sku = await newRow(10);
    const read = await dataSource.getRepository(FencedStock).findOneByOrFail({ sku });
    await write(sku, 3, read.lastFence, 9);
    expect(await rowOf(sku)).toEqual({ quantity: 9, lastFence: 3 });
    await write(sku, 8, 3, 8);
    expect(await rowOf(sku)).toEqual({ quantity: 8, lastFence: 8 });
  });

  it('refuses a holder whose token is below the one that wrote last (its lock was lost)', async () => {
    const sku = await newRow(10);
    await write(sku, 7, 0, 9);
    const error = await write(sku, 5, 7, 8).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FencedWriteRefusedError);
    expect(error).toMatchObject({ token: 5, seenFence: 7, actualFence: 7, id: sku });
    expect((error as Error).message).toMatch(/newer token wrote first/);
    expect(await rowOf(sku)).toEqual({ quantity: 9, lastFence: 7 });
  });

  it('refuses the newer holder whose read came before an older holder\'s late write (no item sold twice)', async () => {
    const sku = await newRow(10);
    // Holder 5 read 10 and its write is late; holder 7 got the lock meanwhile and read 10 too.
    await write(sku, 5, 0, 9);
    const error = await write(sku, 7, 0, 9).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FencedWriteRefusedError);
    expect(error).toMatchObject({ token: 7, seenFence: 0, actualFence: 5 });
    expect(await rowOf(sku)).toEqual({ quantity: 9, lastFence: 5 });
  });

  it('lets a holder write a row again under the same token, once it has read its own write back', async () => {
    // A leader writes many times in one term, a lock holder may update a row twice in its section: the
    // fence equal to the token is this holder's own write, and `fence = :seen` still refuses a stale read.
    const sku = await newRow(10);
    await write(sku, 4, 0, 9);
    await write(sku, 4, 4, 8);
    expect(await rowOf(sku)).toEqual({ quantity: 8, lastFence: 4 });
    const error = await write(sku, 4, 0, 9).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FencedWriteRefusedError);
    expect(error).toMatchObject({ token: 4, seenFence: 0, actualFence: 4 });
    expect((error as Error).message).not.toMatch(/newer token|lost/);
    expect(await rowOf(sku)).toEqual({ quantity: 8, lastFence: 4 });
  });

  it('reports the fence a newer holder wrote, not the snapshot of the caller\'s transaction that read the row', async () => {
    const sku = await newRow(10);
    const error = await dataSource
      .transaction(async (manager) => {
        const read = await manager.getRepository(FencedStock).findOneByOrFail({ sku });
        // A newer holder writes on another connection after this transaction's read (on SQLite's single
        // connection, inside it).
        await dataSource.getRepository(FencedStock).update({ sku }, { quantity: 9, lastFence: 9 });
        await fencedUpdate({ manager, entity: FencedStock, id: sku, token: 5, seenFence: read.lastFence, fenceProperty: 'lastFence', set: { quantity: read.quantity - 1 } });
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FencedWriteRefusedError);
    expect(error).toMatchObject({ token: 5, seenFence: 0, actualFence: 9 });
    expect((error as Error).message).toMatch(/newer token wrote first/);
  });

  it('writes one row of a composite key, its fence under a column name of its own, and refuses an id that is not one whole key', async () => {
    const shop = `shop-${randomUUID().slice(0, 8)}`;
    const bins = dataSource.getRepository(FencedBin);
    await bins.insert([
      { shop, bin: 'a', quantity: 10, lastFence: 0 },
      { shop, bin: 'b', quantity: 10, lastFence: 0 },
    ]);
    const base = { manager: dataSource.manager, entity: FencedBin, token: 4, seenFence: 0, fenceProperty: 'lastFence', set: { quantity: 9 } };
    await fencedUpdate({ ...base, id: { shop, bin: 'a' } });
    const sku = await newRow(10);
    // Each of these would reach more than one row, or none by accident: an array, a key with a column
    // missing (or none at all), a property that is no key, a plain value for a composite key.
    const bad: Array<[typeof FencedBin | typeof FencedStock, unknown]> = [
      [FencedBin, { shop }],
      [FencedBin, {}],
      [FencedBin, 'b'],
      [FencedBin, [{ shop, bin: 'a' }, { shop, bin: 'b' }]],
      [FencedStock, [sku, 'other']],
      [FencedStock, {}],
      [FencedStock, { code: sku }],
      [FencedStock, { sku: null }],
    ];
    for (const [entity, id] of bad) {
      await expect(fencedUpdate({ ...base, entity, id } as never)).rejects.toMatchObject({ name: 'InvalidLockOptionsError', option: 'id' });
    }
    const rows = await bins.find({ where: { shop }, order: { bin: 'ASC' } });
    expect(rows.map((row) => [row.bin, row.quantity, Number(row.lastFence)])).toEqual([
      ['a', 9, 4],
      ['b', 10, 0],
    ]);
    expect(await rowOf(sku)).toEqual({ quantity: 10, lastFence: 0 });
  });

  it('writes a fence kept in an embedded object, beside the other columns of that object, and bumps the version', async () => {
    const account = `acct-${randomUUID().slice(0, 8)}`;
    const ledger = dataSource.getRepository(FencedLedger);
    await ledger.insert({ account, balance: 100, stamp: { fence: 0, writer: '' } });
    const base = { manager: dataSource.manager, entity: FencedLedger, id: account, fenceProperty: 'stamp.fence' };
    await fencedUpdate({ ...base, token: 3, seenFence: 0, set: { balance: 90, stamp: { writer: 'ann' } } });
    await fencedUpdate({ ...base, token: 5, seenFence: 3, set: { balance: 80 } });
    const row = await ledger.findOneByOrFail({ account });
    expect({ balance: row.balance, fence: Number(row.stamp.fence), writer: row.stamp.writer, version: row.version }).toEqual({ balance: 80, fence: 5, writer: 'ann', version: 3 });
    await expect(fencedUpdate({ ...base, token: 7, seenFence: 5, set: { balance: 70, stamp: { fence: 99 } } })).rejects.toMatchObject({ name: 'InvalidLockOptionsError', option: 'set' });
    await expect(fencedUpdate({ ...base, token: 3, seenFence: 5, set: { balance: 70 } })).rejects.toMatchObject({ name: 'FencedWriteRefusedError', actualFence: 5 });
  });

  it('fences a read-modify-write under the lock table from two instances, each with its own pool: 12 buyers sell 12 items once each', async () => {
    const sku = await newRow(12);
    // Two app instances: each its own strategy and connection pool on the same database, as deployed.
    const instances = [0, 1].map(() => new LockManager(new RowLockStrategy({ connection: { ...options(), entities: [], synchronize: false } as DataSourceOptions })));
    try {
      const buy = (manager: LockManager): Promise<void> =>
        new LockService(manager).withLock(`fenced:${sku}`, async (lock) => {
          const read = await rowOf(sku);
          await write(sku, lock.fencingToken as number, read.lastFence, read.quantity - 1);
        }, { waitTimeout: 20_000 });
      await Promise.all(Array.from({ length: 12 }, (_, i) => buy(instances[i % 2])));
      expect(await rowOf(sku)).toMatchObject({ quantity: 0 });
    } finally {
      await Promise.all(instances.map((manager) => manager.close()));
    }
  });

  it('refuses the write of a permit holder whose lease ran out once the holder granted its place wrote (lock-table semaphore, two instances)', async () => {
    const sku = await newRow(10);
    const instances = [0, 1].map(() => new LockManager(new RowLockStrategy({ connection: { ...options(), entities: [], synchronize: false } as DataSourceOptions })));
    try {
      const [first, second] = instances.map((manager) => new LockService(manager));
      // One place (permits: 1) so that the second instance gets in only when the first holder's lease has ended;
      // no watchdog, as a holder frozen past its lease would have none.
      const stale = await first.acquirePermit(`fenced-permit:${sku}`, { permits: 1, ttl: 300, autoExtend: false });
      const staleRead = await rowOf(sku);
      const fresh = await second.acquirePermit(`fenced-permit:${sku}`, { permits: 1, ttl: 10_000, waitTimeout: 10_000 });
      expect(fresh.fencingToken).toBeGreaterThan(stale.fencingToken as number);
      const freshRead = await rowOf(sku);
      await write(sku, fresh.fencingToken as number, freshRead.lastFence, freshRead.quantity - 1);
      // The holder whose permit ran out wakes and writes with what it read before: refused, the row keeps the newer write.
      const error = await write(sku, stale.fencingToken as number, staleRead.lastFence, staleRead.quantity - 1).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(FencedWriteRefusedError);
      expect(error).toMatchObject({ token: stale.fencingToken, actualFence: fresh.fencingToken });
      expect(await rowOf(sku)).toEqual({ quantity: 9, lastFence: fresh.fencingToken });
      expect(stale.signal.aborted).toBe(true);
      await fresh.release();
      await stale.release().catch(() => undefined);
    } finally {
      await Promise.all(instances.map((manager) => manager.close()));
    }
  });

  it('writes inside the caller\'s transaction: rolled back with it', async () => {
    const sku = await newRow(10);
    await expect(
      dataSource.transaction(async (manager) => {
        await fencedUpdate({ manager, entity: FencedStock, id: sku, token: 4, seenFence: 0, fenceProperty: 'lastFence', set: { quantity: 9 } });
        throw new Error('payment declined');
      }),
    ).rejects.toThrow('payment declined');
    expect(await rowOf(sku)).toEqual({ quantity: 10, lastFence: 0 });
  });

  it('reports a row that is gone, and rejects bad input with a typed error that names the field, before any statement', async () => {
    await expect(write('no-such-sku', 4, 0, 1)).rejects.toMatchObject({ name: 'FencedWriteRefusedError', actualFence: undefined });
    const sku = await newRow(5);
    const base = { manager: dataSource.manager, entity: FencedStock, id: sku, token: 4, seenFence: 0, fenceProperty: 'lastFence', set: { quantity: 4 } };
    const bad: Array<[string, Record<string, unknown>]> = [
      ['token', { token: null }],
      ['token', { token: 0 }],
      ['token', { token: 1.5 }],
      ['token', { token: '4' }],
      ['token', { token: Number.MAX_SAFE_INTEGER + 2 }],
      ['seenFence', { seenFence: -1 }],
      ['seenFence', { seenFence: '1e3' }],
      ['seenFence', { seenFence: '' }],
      ['seenFence', { seenFence: undefined }],
      ['fenceProperty', { fenceProperty: '' }],
      ['fenceProperty', { fenceProperty: 'last_fence_typo' }],
      ['set', { set: null }],
      ['set', { set: { quantity: 3, lastFence: 99 } }],
      ['id', { id: undefined }],
      ['manager', { manager: {} }],
    ];
    for (const [option, change] of bad) {
      await expect(fencedUpdate({ ...base, ...change } as never)).rejects.toMatchObject({ name: 'InvalidLockOptionsError', option });
    }
    expect(await rowOf(sku)).toEqual({ quantity: 5, lastFence: 0 });
  });
});
