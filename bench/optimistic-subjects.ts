import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { runWithOptimisticRetry } from '@app/distributed-lock';
import { optimisticUpdate } from '@app/distributed-lock/strategies/database';
import { createPool, type Pool } from 'mysql2/promise';
import { DataSource } from 'typeorm';
import { StockRow } from '../test/support/stock-row.entity';
import { callbackPool, rawQuery } from './raw-mysql';

/** One optimistic increment of a shared counter row; resolves how many version conflicts it retried. */
export interface BenchUpdater {
  increment(): Promise<number>;
  /** The counter's value, to check that no update was lost. */
  value(): Promise<number>;
  close(): Promise<void>;
}

export interface OptimisticBenchSubject {
  readonly subject: string;
  readonly ours: boolean;
  readonly floor?: string;
  readonly settings: string;
  create(): Promise<BenchUpdater>;
}

const url = (): string => {
  const value = process.env.LOCK_TEST_MYSQL_URL;
  if (!value) throw new Error('LOCK_TEST_MYSQL_URL is not set');
  return value;
};

/** The application's read of the row, the same raw SELECT for ours and the floor. */
async function readCounter(pool: Pool, sku: string): Promise<{ quantity: number; version: number }> {
  const rows = await rawQuery<Array<{ quantity: number; version: number }>>(callbackPool(pool), 'SELECT quantity, version FROM fixture_stock WHERE sku = ?', [sku]);
  return rows[0];
}

/**
 * Ours: `optimisticUpdate` over TypeORM, re-run on conflict by `runWithOptimisticRetry`. The read is the
 * application's, not the library's: it is the floor's raw SELECT here too, so that the ratio to the floor
 * is what the library adds. (A TypeORM repository read instead adds about 130 µs per cycle on this
 * machine, measured separately; that is TypeORM's cost whichever lock or version check is used.)
 */
async function ours(): Promise<BenchUpdater> {
  const dataSource = await new DataSource({ type: 'mysql', url: url(), entities: [StockRow], synchronize: true, poolSize: 40 }).initialize();
  const pool = createPool({ uri: url(), connectionLimit: 40 });
  const sku = randomUUID();
  await dataSource.getRepository(StockRow).insert({ sku, quantity: 0 });
  return {
    async increment() {
      let conflicts = 0;
      await runWithOptimisticRetry(
        async () => {
          const row = await readCounter(pool, sku);
          await optimisticUpdate({ manager: dataSource.manager, entity: StockRow, id: sku, expectedVersion: row.version, set: { quantity: row.quantity + 1 } });
        },
        { retries: 1_000, backoff: { initialDelay: 1, maxDelay: 20 }, onConflict: () => (conflicts += 1) },
      );
      return conflicts;
    },
    async value() {
      return (await dataSource.getRepository(StockRow).findOneByOrFail({ sku })).quantity;
    },
    close: async () => {
      await pool.end();
      await dataSource.destroy();
    },
  };
}

/** The floor: the same read and version-checked UPDATE as raw SQL on a mysql2 pool's callback API, retried at once. */
async function floor(): Promise<BenchUpdater> {
  const pool = createPool({ uri: url(), connectionLimit: 40 });
  // The same table as ours (created there by TypeORM's synchronize when ours ran; here if it did not).
  await pool.query('CREATE TABLE IF NOT EXISTS fixture_stock (sku VARCHAR(64) PRIMARY KEY, quantity INT NOT NULL, version INT NOT NULL) ENGINE=InnoDB');
  const sku = randomUUID();
  await pool.query('INSERT INTO fixture_stock (sku, quantity, version) VALUES (?, 0, 1)', [sku]);
  return {
    async increment() {
      for (let conflicts = 0; ; conflicts += 1) {
        const row = await readCounter(pool, sku);
        const result = await rawQuery<{ affectedRows: number }>(callbackPool(pool), 'UPDATE fixture_stock SET quantity = ?, version = version + 1 WHERE sku = ? AND version = ?', [row.quantity + 1, sku, row.version]);
        if (result.affectedRows === 1) return conflicts;
      }
    },
    async value() {
      const [rows] = (await pool.query('SELECT quantity FROM fixture_stock WHERE sku = ?', [sku])) as unknown as [Array<{ quantity: number }>];
      return rows[0].quantity;
    },
    close: () => pool.end(),
  };
}

export const OPTIMISTIC_SUBJECTS: readonly OptimisticBenchSubject[] = [
  { subject: 'optimistic-mysql', ours: true, floor: 'floor:mysql version UPDATE', settings: 'optimisticUpdate + runWithOptimisticRetry over TypeORM (the read: the floor\'s raw SELECT), MariaDB 10.11', create: ours },
  { subject: 'floor:mysql version UPDATE', ours: false, settings: 'raw mysql2: SELECT, then UPDATE … WHERE version = ?, retried at once', create: floor },
];
