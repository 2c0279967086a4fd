import type { DataSource } from 'typeorm';
import { loadPeerDependency } from '../load-peer-dependency';
import type { LockDataSource } from './database-client.type';
import { queryPg } from './pg-direct';
import { mysqlConnectionOf, mysqlPoolOf, pgClientOf, pgPoolOf, type MysqlQueryable } from './typeorm-internals';

// The fast path of the database strategies: their few, fixed statements sent straight to the mysql2 or pg
// pool or connection under TypeORM (found through typeorm-internals.ts; on pg as named statements, see
// pg-direct.ts), or through TypeORM's query runner where there is none, or when the strategy's `fastPaths`
// option is false.

/** A statement's result in the shape TypeORM's query runner gives with `useStructuredResult`. */
export interface DirectResult {
  readonly raw: unknown;
  readonly records: unknown[];
  readonly affected?: number;
}

/**
 * True when something of TypeORM's would miss a statement sent straight to mysql2: entity subscribers
 * (they hear query-builder writes and transaction events), query logging, or a slow-query threshold.
 * The direct paths step aside then.
 */
export function typeOrmObserves(dataSource: Pick<DataSource, 'subscribers' | 'options'>): boolean {
  return dataSource.subscribers.length > 0 || Boolean(dataSource.options.logging) || Boolean(dataSource.options.maxQueryExecutionTime);
}

/**
 * A statement sent straight that failed, as TypeORM's own path reports it (`QueryFailedError`): callers
 * that catch TypeORM's errors keep working. `user` names the API in the message if typeorm is missing.
 */
export function typeOrmQueryError(sql: string, values: readonly unknown[], error: unknown, user: string): Error {
  const { QueryFailedError } = loadPeerDependency<typeof import('typeorm')>('typeorm', user);
  return new QueryFailedError(sql, [...values], error as Error);
}

/** Runs one statement on a mysql2 pool or connection. */
export function queryDirect(target: MysqlQueryable, sql: string, values: readonly unknown[]): Promise<DirectResult> {
  return new Promise((resolve, reject) => {
    target.query(sql, values, (error, result) => {
      if (error) return reject(error);
      const affected = (result as { affectedRows?: unknown } | null)?.affectedRows;
      resolve({ raw: result, records: Array.isArray(result) ? result : [], affected: typeof affected === 'number' ? affected : undefined });
    });
  });
}

/** A TypeORM query runner, as far as these helpers use it. */
interface StatementRunner {
  query(sql: string, values: unknown[], structured: true): Promise<DirectResult>;
}

/**
 * One statement of a strategy on the data source: straight to its mysql2 or pg pool when it has one and
 * `fastPaths` allows it, otherwise through a TypeORM query runner taken for it (SQLite, replication).
 * TypeORM's query runner adds per statement a module lookup, a captured stack, subscriber broadcasts and
 * result copies, which was most of what a lock cost over its raw SQL. Statements sent straight therefore
 * do not show in TypeORM's query log.
 */
export async function queryOnDataSource(dataSource: LockDataSource, sql: string, values: unknown[], fastPaths: boolean): Promise<DirectResult> {
  if (fastPaths) {
    const pool = mysqlPoolOf(dataSource);
    if (pool) return queryDirect(pool, sql, values);
    const pg = pgPoolOf(dataSource);
    if (pg) return queryPg(pg, sql, values);
  }
  const runner = dataSource.createQueryRunner();
  try {
    return await (runner as unknown as StatementRunner).query(sql, values, true);
  } finally {
    await runner.release();
  }
}

/** One statement on a connected query runner's own connection (inside its transaction): direct when it is mysql2's or pg's and `fastPaths` allows it. */
export function queryOnRunner(runner: unknown, sql: string, values: unknown[], fastPaths: boolean): Promise<DirectResult> {
  if (fastPaths) {
    const connection = mysqlConnectionOf(runner);
    if (connection) return queryDirect(connection, sql, values);
    const client = pgClientOf(runner);
    if (client) return queryPg(client, sql, values);
  }
  return (runner as StatementRunner).query(sql, values, true);
}
