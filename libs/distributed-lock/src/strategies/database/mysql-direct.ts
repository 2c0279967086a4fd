import type { DataSource } from 'typeorm';
import { loadPeerDependency } from '../load-peer-dependency';
import type { LockDataSource } from './database-client.type';

/** The callback `query` of a mysql2 pool or connection. */
export interface MysqlQueryable {
  query(sql: string, values: readonly unknown[], callback: (error: Error | null, result: unknown) => void): unknown;
}

/** A statement's result in the shape TypeORM's query runner gives with `useStructuredResult`. */
export interface DirectResult {
  readonly raw: unknown;
  readonly records: unknown[];
  readonly affected?: number;
}

function isQueryable(value: unknown): value is MysqlQueryable {
  return typeof (value as MysqlQueryable | undefined)?.query === 'function';
}

/**
 * The data source's single mysql2 pool, or undefined (SQLite, a replication cluster, a data source that
 * is not TypeORM's own). The strategies send their few, fixed statements straight to it: TypeORM's query
 * runner adds per statement a module lookup, a captured stack, subscriber broadcasts and result copies,
 * which was most of what a lock cost over its raw SQL. Those statements therefore do not show in
 * TypeORM's query log.
 */
export function mysqlPoolOf(dataSource: LockDataSource): MysqlQueryable | undefined {
  const pool = (dataSource as { driver?: { pool?: unknown } }).driver?.pool;
  return dataSource.options.type !== 'better-sqlite3' && isQueryable(pool) ? pool : undefined;
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

/** The mysql2 connection under a connected TypeORM query runner, if it is one. */
export function mysqlConnectionOf(runner: unknown): MysqlQueryable | undefined {
  const connection = (runner as { databaseConnection?: unknown }).databaseConnection;
  return isQueryable(connection) ? connection : undefined;
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
 * One statement of a strategy on the data source: straight to its mysql2 pool when it has one (see
 * `mysqlPoolOf`), otherwise through a TypeORM query runner taken for it (SQLite, replication).
 */
export async function queryOnDataSource(dataSource: LockDataSource, sql: string, values: unknown[]): Promise<DirectResult> {
  const pool = mysqlPoolOf(dataSource);
  if (pool) return queryDirect(pool, sql, values);
  const runner = dataSource.createQueryRunner();
  try {
    return await (runner as unknown as StatementRunner).query(sql, values, true);
  } finally {
    await runner.release();
  }
}

/** One statement on a connected query runner's own connection (inside its transaction): direct when it is mysql2's. */
export function queryOnRunner(runner: unknown, sql: string, values: unknown[]): Promise<DirectResult> {
  const connection = mysqlConnectionOf(runner);
  return connection ? queryDirect(connection, sql, values) : (runner as StatementRunner).query(sql, values, true);
}

/** The server's id for the connection under a connected query runner (for KILL QUERY and the audit column), if known. */
export function connectionIdOf(runner: unknown): number | undefined {
  const id = (runner as { databaseConnection?: { threadId?: unknown } }).databaseConnection?.threadId;
  return Number.isInteger(id) ? (id as number) : undefined;
}
