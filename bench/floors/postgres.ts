// The raw PostgreSQL floors: the very statements of the row and pessimistic strategies, through a pg pool
// (the driver TypeORM uses under the strategies), without TypeORM.
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { fenceTableDdl, leaseTableDdl, rowTableDdl } from '@app/distributed-lock/strategies/database';
import { pessimisticStatements } from '@app/distributed-lock/strategies/database/pessimistic-lock.sql';
import { rowLockStatements } from '@app/distributed-lock/strategies/database/row-lock.sql';
import { SQL_DIALECTS } from '@app/distributed-lock/strategies/database/sql-dialect';
import type { BenchLock } from '../bench-subject';
import { env } from '../bench-env';
import { yieldLoop } from './yield-loop';

export const POSTGRES_ROW_FLOOR = 'floor:postgres row strategy SQL (UPDATE take-over + UPDATE free)';
export const POSTGRES_PESSIMISTIC_FLOOR = 'floor:postgres pessimistic strategy SQL (lock_timeout + FOR UPDATE + token upsert + COMMIT)';

const postgres = SQL_DIALECTS.postgres;

/** A pg pool on the benchmark's server, as large as the strategies' pools. */
export function benchPgPool(): Pool {
  return new Pool({ connectionString: env('LOCK_TEST_POSTGRES_URL'), max: 40 });
}

/** Runs a CREATE … IF NOT EXISTS that another process of the run may be running at the same moment. */
export async function createOnce(pool: Pool, ddl: string): Promise<void> {
  await pool.query(ddl).catch(async () => pool.query(ddl));
}

/** The row strategy's floor on PostgreSQL: its statements through a raw pg pool. Waiting: bare retries. */
export function rawPostgresRowFloor(): () => Promise<BenchLock> {
  return async () => {
    const pool = benchPgPool();
    await createOnce(pool, leaseTableDdl(postgres, 'bench_floor_leases'));
    const sql = rowLockStatements(postgres, 'bench_floor_leases');
    const ttlMs = 30_000;
    return {
      async acquire(key, waitMs) {
        const owner = randomUUID();
        const deadline = Date.now() + waitMs;
        for (;;) {
          const taken = await pool.query(sql.takeOver, [owner, owner, owner, ttlMs, owner, key, owner]);
          if (taken.rowCount === 1) break;
          // A key that has its row inserts nothing (ON CONFLICT DO NOTHING): no error, which would cost pg's
          // pool the connection.
          if ((await pool.query(sql.insert, [key, owner, ttlMs])).rowCount === 1) break;
          if (Date.now() > deadline) throw new Error(`floor: ${key} not taken within ${waitMs} ms`);
          await yieldLoop();
        }
        return async () => {
          await pool.query(sql.releaseLast, [key, owner]);
        };
      },
      close: () => pool.end(),
    };
  };
}

/**
 * The pessimistic strategy's floor on PostgreSQL: the key's row once per key; per section, on one
 * connection: BEGIN, the row's FOR UPDATE with the transaction's lock_timeout set in the same statement
 * (waiting on the server), the next fencing token in autocommit on another connection, COMMIT.
 */
export function rawPostgresPessimisticFloor(): () => Promise<BenchLock> {
  return async () => {
    const pool = benchPgPool();
    await createOnce(pool, rowTableDdl(postgres, 'bench_floor_rows'));
    await createOnce(pool, fenceTableDdl(postgres, 'bench_floor_fences'));
    const sql = pessimisticStatements(postgres, 'bench_floor_rows', 'bench_floor_fences');
    const knownRows = new Set<string>();
    return {
      async acquire(key, waitMs) {
        if (!knownRows.has(key)) {
          const found = await pool.query(sql.rowExists, [key]);
          if (found.rowCount === 0) await pool.query(sql.insertRow(Math.max(1, Math.ceil(waitMs / 1000))), [key]);
          knownRows.add(key);
        }
        const client = await pool.connect();
        try {
          await client.query('START TRANSACTION');
          // The wait's lock_timeout and the row lock: one statement, as the strategy sends them.
          await client.query(sql.lockRow(Math.ceil(waitMs / 1000), waitMs), sql.lockRowParameters(key, waitMs));
          await pool.query(sql.nextToken, [key, randomUUID(), (client as unknown as { processID: number }).processID]);
        } catch (error) {
          await client.query('ROLLBACK').catch(() => undefined);
          client.release();
          throw error;
        }
        return async () => {
          await client.query('COMMIT');
          client.release();
        };
      },
      close: () => pool.end(),
    };
  };
}
