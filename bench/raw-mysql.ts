import type { Pool, PoolConnection } from 'mysql2/promise';

/** The part of mysql2's callback API the floors use (a pool's or a connection's `query`). */
interface CallbackQueryable {
  query(sql: string, values: unknown[], callback: (error: Error | null, result: unknown) => void): unknown;
}

/**
 * One statement through mysql2's callback API, which is the cheapest raw way to the server: the promise
 * API captures a stack trace per statement, about 10 µs here (measured: 92 vs 83 µs per SELECT), and
 * a floor should not pay what our strategies (which use the callback API) do not.
 */
export function rawQuery<T>(target: CallbackQueryable, sql: string, values: unknown[] = []): Promise<T> {
  return new Promise((resolve, reject) => {
    target.query(sql, values, (error, result) => (error ? reject(error) : resolve(result as T)));
  });
}

/** The callback pool under a mysql2 promise pool. */
export const callbackPool = (pool: Pool): CallbackQueryable => pool.pool as unknown as CallbackQueryable;

/** The callback connection under a mysql2 promise pool connection. */
export const callbackConnection = (connection: PoolConnection): CallbackQueryable => connection.connection as unknown as CallbackQueryable;
