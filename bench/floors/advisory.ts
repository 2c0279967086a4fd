// The raw floor of the advisory strategy on PostgreSQL: pg_advisory_lock / pg_advisory_unlock on a pooled
// pg connection (the driver TypeORM uses under the strategy), as a hand-written wrapper would do it. Its
// MySQL/MariaDB counterpart is the GET_LOCK peer (peers.ts), on mysql2.
import { postgresAdvisoryKey } from '@app/distributed-lock/strategies/database';
import type { BenchLock } from '../bench-subject';
import { benchPgPool } from './postgres';

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
