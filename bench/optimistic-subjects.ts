import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { runWithOptimisticRetry } from '@app/distributed-lock';
import { optimisticUpdate } from '@app/distributed-lock/strategies/database';
import { createPool } from 'mysql2/promise';
import { Column, DataSource, Entity, PrimaryColumn, VersionColumn } from 'typeorm';

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

@Entity({ name: 'bench_counters' })
class BenchCounter {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id!: string;

  @Column({ type: 'int' })
  value!: number;

  @VersionColumn()
  version!: number;
}

const url = (): string => {
  const value = process.env.LOCK_TEST_MYSQL_URL;
  if (!value) throw new Error('LOCK_TEST_MYSQL_URL is not set');
  return value;
};

/** Ours: read through TypeORM, `optimisticUpdate`, re-run on conflict by `runWithOptimisticRetry`. */
async function ours(): Promise<BenchUpdater> {
  const dataSource = await new DataSource({ type: 'mysql', url: url(), entities: [BenchCounter], synchronize: true, poolSize: 40 }).initialize();
  const id = randomUUID();
  await dataSource.getRepository(BenchCounter).insert({ id, value: 0 });
  return {
    async increment() {
      let conflicts = 0;
      await runWithOptimisticRetry(
        async () => {
          const row = await dataSource.getRepository(BenchCounter).findOneByOrFail({ id });
          await optimisticUpdate({ manager: dataSource.manager, entity: BenchCounter, id, expectedVersion: row.version, set: { value: row.value + 1 } });
        },
        { retries: 1_000, backoff: { initialDelay: 1, maxDelay: 20 }, onConflict: () => (conflicts += 1) },
      );
      return conflicts;
    },
    async value() {
      return (await dataSource.getRepository(BenchCounter).findOneByOrFail({ id })).value;
    },
    close: () => dataSource.destroy(),
  };
}

/** The floor: the same read and version-checked UPDATE as raw SQL on a mysql2 pool, retried at once. */
async function floor(): Promise<BenchUpdater> {
  const pool = createPool({ uri: url(), connectionLimit: 40 });
  await pool.query('CREATE TABLE IF NOT EXISTS bench_counters (id VARCHAR(64) PRIMARY KEY, value INT NOT NULL, version INT NOT NULL) ENGINE=InnoDB');
  const id = randomUUID();
  await pool.query('INSERT INTO bench_counters (id, value, version) VALUES (?, 0, 1)', [id]);
  return {
    async increment() {
      for (let conflicts = 0; ; conflicts += 1) {
        const [rows] = (await pool.query('SELECT value, version FROM bench_counters WHERE id = ?', [id])) as unknown as [Array<{ value: number; version: number }>];
        const [result] = (await pool.query('UPDATE bench_counters SET value = ?, version = version + 1 WHERE id = ? AND version = ?', [rows[0].value + 1, id, rows[0].version])) as unknown as [{ affectedRows: number }];
        if (result.affectedRows === 1) return conflicts;
      }
    },
    async value() {
      const [rows] = (await pool.query('SELECT value FROM bench_counters WHERE id = ?', [id])) as unknown as [Array<{ value: number }>];
      return rows[0].value;
    },
    close: () => pool.end(),
  };
}

export const OPTIMISTIC_SUBJECTS: readonly OptimisticBenchSubject[] = [
  { subject: 'optimistic-mysql', ours: true, floor: 'floor:mysql version UPDATE', settings: 'optimisticUpdate + runWithOptimisticRetry over TypeORM, MariaDB 10.11', create: ours },
  { subject: 'floor:mysql version UPDATE', ours: false, settings: 'raw mysql2: SELECT, then UPDATE … WHERE version = ?, retried at once', create: floor },
];
