// The raw floors of the advisory strategy. On PostgreSQL: pg_advisory_lock / pg_advisory_unlock on a pooled
// pg connection (the driver TypeORM uses under the strategy), as a hand-written wrapper would do it; its
// MySQL/MariaDB counterpart is the GET_LOCK peer (peers.ts), on mysql2. And on both, the strategy's own
// statements (the fencing token included) sent raw.
import { createPool, type ResultSetHeader, type RowDataPacket } from 'mysql2/promise';
import { fenceTableDdl, getLockName, postgresAdvisoryKey } from '@app/distributed-lock/strategies/database';
import { advisoryDdl, advisoryStatements } from '@app/distributed-lock/strategies/database/advisory-lock.sql';
import { SQL_DIALECTS } from '@app/distributed-lock/strategies/database/sql-dialect';
import type { BenchLock } from '../bench-subject';
import { env } from '../bench-env';
import { benchPgPool, createOnce } from './postgres';

export const PG_ADVISORY_FLOOR = 'floor:postgres pg_advisory_lock + pg_advisory_unlock';

/** `pg_advisory_lock(key)` on a connection taken from the pool for the section; the wait is the server's. */
export function rawPgAdvisoryFloor(): () => Promise<BenchLock> {
  return async () => {
    const pool = benchPgPool();
    return {
      async acquire(key) {
        const id = postgresAdvisoryKey(key);
        const client = await pool.connect();
        try {
          await client.query('SELECT pg_advisory_lock($1::bigint)', [id]);
        } catch (error) {
          client.release(error as Error);
          throw error;
        }
        return async () => {
          await client.query('SELECT pg_advisory_unlock($1::bigint)', [id]);
          client.release();
        };
      },
      close: () => pool.end(),
    };
  };
}

export const PG_ADVISORY_SQL_FLOOR = 'floor:postgres advisory strategy SQL (lock + token in one SELECT, unlock)';
export const MYSQL_ADVISORY_SQL_FLOOR = 'floor:mysql advisory strategy SQL (GET_LOCK + token upsert in one INSERT, RELEASE_LOCK)';

const FLOOR_TOKENS = { sequence: 'bench_floor_advisory_tokens', fences: 'bench_floor_advisory_fences' };
/** The owner id the MySQL floor writes with each grant: the form and length of a lock manager's ("host:pid:uuid"). */
const FLOOR_OWNER = `bench-host:12345:${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}`;

/**
 * The advisory strategy's own statements on PostgreSQL, sent raw on a pooled pg connection as named
 * statements: its waiting lock statement, which draws the fencing token from a sequence in the same SELECT
 * (the strategy tries first with the same token, and waits only when refused: one statement either way when
 * the lock is free), and the unlock. Against the bare floor above, it says what the token costs the server;
 * ours against it, what the library's code adds.
 */
export function rawPgAdvisorySqlFloor(): () => Promise<BenchLock> {
  return async () => {
    const pool = benchPgPool();
    for (const ddl of advisoryDdl(SQL_DIALECTS.postgres, FLOOR_TOKENS, fenceTableDdl)) await createOnce(pool, ddl);
    const sql = advisoryStatements(SQL_DIALECTS.postgres, 'session', FLOOR_TOKENS);
    const unlock = sql.unlock as string;
    return {
      async acquire(key, waitMs) {
        const id = postgresAdvisoryKey(key);
        const deadline = Date.now() + waitMs;
        const client = await pool.connect();
        try {
          const { rows } = await client.query<{ fencing_token: string | null }>({ name: 'floor-advisory-lock', text: sql.lock, values: [id, `${Math.max(1, Math.ceil(deadline - Date.now()))}ms`] });
          if (rows[0]?.fencing_token == null) throw new Error(`no fencing token for ${key}`);
        } catch (error) {
          // The lock may have been granted as the statement failed: the connection is not reused.
          client.release(error as Error);
          throw error;
        }
        return async () => {
          try {
            await client.query({ name: 'floor-advisory-unlock', text: unlock, values: [id] });
            client.release();
          } catch (error) {
            client.release(error as Error);
            throw error;
          }
        };
      },
      close: () => pool.end(),
    };
  };
}

/**
 * The advisory strategy's own statements on MySQL/MariaDB, sent raw on a pooled mysql2 connection: the
 * `INSERT … SELECT … WHERE GET_LOCK(…)` that takes the lock and writes its fencing token in one statement,
 * waiting what is left of the wait (fractional seconds, as the strategy sends it; the strategy tries with 0
 * first; its owner id is a fixed one, of the length of a real owner id), and `RELEASE_LOCK`. Its counterpart without the token is the GET_LOCK peer.
 */
export function rawMysqlAdvisorySqlFloor(): () => Promise<BenchLock> {
  return async () => {
    const pool = createPool({ uri: env('LOCK_TEST_MYSQL_URL'), connectionLimit: 40 });
    const [version] = await pool.query<RowDataPacket[]>('SELECT VERSION() AS v');
    const dialect = { ...SQL_DIALECTS.mysql, mariadb: /mariadb/i.test(String(version[0]?.v)) };
    for (const ddl of advisoryDdl(dialect, FLOOR_TOKENS, fenceTableDdl)) await pool.query(ddl);
    const sql = advisoryStatements(dialect, 'session', FLOOR_TOKENS);
    const unlock = sql.unlock as string;
    return {
      async acquire(key, waitMs) {
        const name = getLockName(key);
        const deadline = Date.now() + waitMs;
        const connection = await pool.getConnection();
        try {
          const [result] = await connection.query<ResultSetHeader>(sql.lock, [key, FLOOR_OWNER, name, Math.max(1, Math.ceil(deadline - Date.now())) / 1000]);
          if (result.affectedRows === 0) throw new Error(`GET_LOCK(${key}) timed out`);
        } catch (error) {
          // The lock may have been granted as the statement failed: the connection is not reused.
          connection.destroy();
          throw error;
        }
        return async () => {
          try {
            await connection.query(unlock, [name]);
            connection.release();
          } catch (error) {
            connection.destroy();
            throw error;
          }
        };
      },
      close: () => pool.end(),
    };
  };
}
