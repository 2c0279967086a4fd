// The raw MySQL/MariaDB floors: the very statements of the row and pessimistic strategies, through mysql2.
import { randomUUID } from 'node:crypto';
import { createPool, type Pool, type ResultSetHeader, type RowDataPacket } from 'mysql2/promise';
import { fenceTableDdl, leaseTableDdl, rowTableDdl } from '@app/distributed-lock/strategies/database';
import { pessimisticStatements } from '@app/distributed-lock/strategies/database/pessimistic-lock.sql';
import { rowLockStatements } from '@app/distributed-lock/strategies/database/row-lock.sql';
import { SQL_DIALECTS, type SqlDialect } from '@app/distributed-lock/strategies/database/sql-dialect';
import type { BenchLock } from '../bench-subject';
import { env } from '../bench-env';
import { callbackConnection, callbackPool, rawQuery } from '../raw-mysql';
import { yieldLoop } from './yield-loop';

/** The MySQL-family dialect of the server behind `pool`, as the DB strategies work it out. */
async function mysqlDialect(pool: Pool): Promise<SqlDialect> {
  const [rows] = await pool.query<RowDataPacket[]>('SELECT VERSION() AS v');
  return { ...SQL_DIALECTS.mysql, mariadb: /mariadb/i.test(String(rows[0]?.v)) };
}

/**
 * The row strategy's floor: the very statements it issues (take over the key's row, or insert it; free
 * it on release), sent through a raw mysql2 pool's callback API: no TypeORM, no validation, no watchdog. Waiting: bare
 * retries.
 */
export function rawRowFloor(): () => Promise<BenchLock> {
  return async () => {
    const pool = createPool({ uri: env('LOCK_TEST_MYSQL_URL'), connectionLimit: 40 });
    const dialect = await mysqlDialect(pool);
    await pool.query(leaseTableDdl(dialect, 'bench_floor_leases'));
    const sql = rowLockStatements(dialect, 'bench_floor_leases');
    const raw = callbackPool(pool);
    const ttlMs = 30_000;
    return {
      async acquire(key, waitMs) {
        const owner = randomUUID();
        const deadline = Date.now() + waitMs;
        for (;;) {
          const taken = await rawQuery<ResultSetHeader>(raw, sql.takeOver, [owner, owner, owner, ttlMs, owner, key, owner]);
          if (taken.affectedRows === 1) break;
          try {
            await rawQuery(raw, sql.insert, [key, owner, ttlMs]);
            break;
          } catch (error) {
            if ((error as { errno?: number }).errno !== 1062 || Date.now() > deadline) throw error;
            await yieldLoop();
          }
        }
        return async () => {
          await rawQuery(raw, sql.releaseLast, [key, owner]);
        };
      },
      close: () => pool.end(),
    };
  };
}

/**
 * The pessimistic strategy's floor: its statements through a raw mysql2 pool's callback API. The key's row once per key;
 * per section, on one connection: START TRANSACTION, the row's FOR UPDATE (waiting on the server), the
 * next fencing token in autocommit on another connection, COMMIT.
 */
export function rawPessimisticFloor(): () => Promise<BenchLock> {
  return async () => {
    const pool = createPool({ uri: env('LOCK_TEST_MYSQL_URL'), connectionLimit: 40 });
    const dialect = await mysqlDialect(pool);
    await pool.query(rowTableDdl(dialect, 'bench_floor_rows'));
    await pool.query(fenceTableDdl(dialect, 'bench_floor_fences'));
    const sql = pessimisticStatements(dialect, 'bench_floor_rows', 'bench_floor_fences');
    const raw = callbackPool(pool);
    const knownRows = new Set<string>();
    return {
      async acquire(key, waitMs) {
        if (!knownRows.has(key)) {
          const [rows] = await pool.query<RowDataPacket[]>(sql.rowExists, [key]);
          if (rows.length === 0) await pool.query(sql.insertRow(Math.max(1, Math.ceil(waitMs / 1000))), [key]);
          knownRows.add(key);
        }
        const connection = await pool.getConnection();
        const held = callbackConnection(connection);
        try {
          await rawQuery(held, 'START TRANSACTION');
          await rawQuery(held, sql.lockRow(Math.max(1, Math.ceil(waitMs / 1000))), [key]);
          await rawQuery(raw, sql.nextToken, [key, randomUUID(), connection.threadId]);
        } catch (error) {
          await rawQuery(held, 'ROLLBACK').catch(() => undefined);
          connection.release();
          throw error;
        }
        return async () => {
          await rawQuery(held, 'COMMIT');
          connection.release();
        };
      },
      close: () => pool.end(),
    };
  };
}
