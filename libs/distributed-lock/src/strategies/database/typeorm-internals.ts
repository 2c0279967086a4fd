import type { QueryRunner } from 'typeorm';
import type { LockDataSource } from './database-client.type';
import { isMysql, isPostgres } from './database-driver';
import type { PgQueryable } from './pg-direct';
import { trackLeftPool } from './pool-sockets';

// Everything the database strategies and `optimisticUpdate` read or write of TypeORM's state that is not
// its public API, and of the mysql2 objects under it. Proven against the TypeORM and mysql2 versions this
// repository pins (test/integration/database.int.spec.ts); each accessor answers "not available" (undefined,
// false, a no-op) when the shape it expects is not there, and the caller then does without.
//
// Two kinds:
// - fast paths, which have a public equivalent: the mysql2 pool and connection under TypeORM (statements
//   sent straight, see mysql-direct.ts), and the query runner's transaction bookkeeping (see
//   runner-transaction.ts). The `fastPaths: false` option of RowLockStrategy, PessimisticLockStrategy and
//   optimisticUpdate turns them off: everything then goes through TypeORM's public API;
// - what the pessimistic strategy knows of its connection and TypeORM does not expose (the server's id for
//   the connection, its end and error events, whether it closed). There is no public equivalent; without
//   them it kills no waiting statement at the caller's deadline and finds a dead connection only at the
//   next extension or at the release.
// The sockets under the pools, which a close past its bound destroys, are pool-sockets.ts's.

/** The callback `query` of a mysql2 pool or connection. */
export interface MysqlQueryable {
  query(sql: string, values: readonly unknown[], callback: (error: Error | null, result: unknown) => void): unknown;
}

function isQueryable(value: unknown): value is MysqlQueryable {
  return typeof (value as MysqlQueryable | undefined)?.query === 'function';
}

/**
 * The driver connection TypeORM keeps under a connected query runner (`databaseConnection`): a mysql2
 * connection (`threadId`, `_closing`, `stream`) or a pg client (`processID`, `_queryable`, `_ending`,
 * `connection.stream`).
 */
interface Mysql2Connection {
  threadId?: unknown;
  _closing?: boolean;
  stream?: { destroyed?: boolean };
  processID?: unknown;
  _queryable?: boolean;
  _ending?: boolean;
  connection?: { stream?: { destroyed?: boolean } };
}

function connectionUnder(runner: unknown): Mysql2Connection | undefined {
  return (runner as { databaseConnection?: Mysql2Connection }).databaseConnection;
}

/** The data source's single mysql2 pool (TypeORM's `driver.pool`), or undefined (SQLite, PostgreSQL, a replication cluster, a data source that is not TypeORM's own). */
export function mysqlPoolOf(dataSource: LockDataSource): MysqlQueryable | undefined {
  const pool = (dataSource as { driver?: { pool?: unknown } }).driver?.pool;
  return isMysql(dataSource.options) && isQueryable(pool) ? pool : undefined;
}

/**
 * The mysql2 connection under a connected TypeORM query runner, if it is one. Checked by the runner's
 * data source: a pg client has a `query` method too, and would get MySQL's `?` placeholders.
 */
export function mysqlConnectionOf(runner: unknown): MysqlQueryable | undefined {
  if (!isMysql((runner as { connection?: { options?: { type?: unknown } } }).connection?.options)) return undefined;
  const connection = connectionUnder(runner);
  return isQueryable(connection) ? connection : undefined;
}

function isPgQueryable(value: unknown): value is PgQueryable {
  return typeof (value as PgQueryable | undefined)?.query === 'function';
}

/** The data source's pg pool (TypeORM's `driver.master`), or undefined (another driver, a replication set-up, a data source that is not TypeORM's own). */
export function pgPoolOf(dataSource: LockDataSource): PgQueryable | undefined {
  const driver = (dataSource as { driver?: { master?: unknown; slaves?: unknown[] } }).driver;
  if (!isPostgres(dataSource.options) || (driver?.slaves?.length ?? 0) > 0) return undefined;
  return isPgQueryable(driver?.master) ? driver.master : undefined;
}

/** The pg client under a connected TypeORM query runner of a postgres data source, if it is one. */
export function pgClientOf(runner: unknown): PgQueryable | undefined {
  if (!isPostgres((runner as { connection?: { options?: { type?: unknown } } }).connection?.options)) return undefined;
  const client = connectionUnder(runner);
  return isPgQueryable(client) && 'processID' in (client as object) ? client : undefined;
}

/**
 * TypeORM's transaction bookkeeping on a query runner: `isTransactionActive` (read-only in its types) and
 * `transactionDepth` (protected), which its `startTransaction()` and `commitTransaction()` keep.
 */
interface TransactionBookkeeping {
  isTransactionActive: boolean;
  isReleased: boolean;
  transactionDepth?: unknown;
}

/** The runner's transaction depth as TypeORM keeps it (0 before a transaction, 1 inside, more in savepoints); undefined if it keeps none. */
export function transactionDepthOf(runner: QueryRunner): unknown {
  return (runner as unknown as TransactionBookkeeping).transactionDepth;
}

/** Records on the runner what TypeORM's `startTransaction()` (`true`) or `commitTransaction()` (`false`) leaves. */
export function recordTransaction(runner: QueryRunner, active: boolean): void {
  const state = runner as unknown as TransactionBookkeeping;
  state.isTransactionActive = active;
  state.transactionDepth = active ? 1 : 0;
}

/**
 * The server's id for the connection under a connected query runner, if known: MySQL's thread id (for
 * KILL QUERY and the audit column), PostgreSQL's backend process id (for pg_cancel_backend).
 */
export function connectionIdOf(runner: unknown): number | undefined {
  const connection = connectionUnder(runner);
  const id = connection?.threadId ?? connection?.processID;
  return Number.isInteger(id) ? (id as number) : undefined;
}

/**
 * PostgreSQL: a statement of the transaction failed (outside a savepoint), so the server aborted it, and
 * freed its locks, at that moment: what is left can only roll back. From pg's ReadyForQuery status ('E'),
 * kept by the client (`getTransactionStatus`, pg 8.21+); false where that is not known (older pg, pg-native,
 * MySQL).
 */
export function isTransactionFailed(runner: QueryRunner): boolean {
  const client = connectionUnder(runner) as { getTransactionStatus?: () => unknown } | undefined;
  return typeof client?.getTransactionStatus === 'function' && client.getTransactionStatus() === 'E';
}

/**
 * PostgreSQL: watches the runner's pg connection, until `stop()`, for a reply saying that its transaction
 * has failed (ReadyForQuery with status 'E', the one that follows a failed statement's error, which may
 * come only while a later statement waits its turn). Where the connection is not pg's, or pg emits no such
 * event, `failed()` stays false.
 */
export function watchTransactionFailure(runner: QueryRunner): { failed(): boolean; stop(): void } {
  const events = (connectionUnder(runner) as { connection?: { on?: unknown; off?: unknown } } | undefined)?.connection;
  if (!isPostgres(runner.connection?.options) || typeof events?.on !== 'function' || typeof events.off !== 'function') {
    return { failed: () => false, stop: () => undefined };
  }
  const emitter = events as { on(event: string, listener: (message: { status?: unknown }) => void): void; off(event: string, listener: (message: { status?: unknown }) => void): void };
  let failed = false;
  const onReady = (message: { status?: unknown }): void => {
    if (message?.status === 'E') failed = true;
  };
  emitter.on('readyForQuery', onReady);
  return { failed: () => failed, stop: () => emitter.off('readyForQuery', onReady) };
}

/**
 * PostgreSQL refused a statement because one before it failed inside a savepoint the section opened (a
 * nested `manager.transaction()`), which the section has not rolled back to yet: the transaction, and the
 * lock taken outside the savepoint, are still there.
 */
export function isFailedInSavepoint(runner: QueryRunner, error: unknown): boolean {
  const shaped = error as { code?: unknown; driverError?: { code?: unknown } } | null;
  return (shaped?.driverError?.code ?? shaped?.code) === '25P02' && Number(transactionDepthOf(runner)) > 1;
}

/** The connection under the runner has closed (killed, dropped): nothing more can be sent on it. */
export function isConnectionClosed(runner: QueryRunner): boolean {
  const connection = connectionUnder(runner);
  return Boolean(connection?._closing || connection?.stream?.destroyed || connection?._queryable === false || connection?._ending || connection?.connection?.stream?.destroyed);
}

/**
 * Calls `onDeath` if the runner's connection ends or fails for good (mysql2: `end`, or a fatal `error`;
 * pg: `end`, or any `error`, which a pg client emits only for its connection); returns the way to stop watching.
 */
export function watchConnection(runner: QueryRunner, onDeath: () => void): () => void {
  const connection = connectionUnder(runner) as
    | { on(event: string, listener: (error?: { fatal?: boolean }) => void): void; off(event: string, listener: (error?: { fatal?: boolean }) => void): void }
    | undefined;
  if (typeof connection?.on !== 'function') return () => undefined;
  const onEnd = (): void => onDeath();
  const pg = 'processID' in (connection as object);
  const onError = (error?: { fatal?: boolean }): void => {
    if (pg || error?.fatal) onDeath();
  };
  connection.on('end', onEnd);
  connection.on('error', onError);
  return () => {
    connection.off('end', onEnd);
    connection.off('error', onError);
  };
}

/**
 * Gives the runner's connection back to no one: closes it, so that the pool never hands out a connection
 * that may still hold a session lock (an advisory lock whose unlock failed). mysql2: `destroy()` takes it
 * out of the pool; pg: TypeORM's `releasePostgresConnection(error)` has pg-pool discard it. Falls back to
 * a plain release where neither is there.
 */
export async function discardConnection(runner: QueryRunner): Promise<void> {
  const connection = connectionUnder(runner) as { destroy?: () => void } | undefined;
  trackLeftPool((runner as { connection?: object }).connection, connection);
  const pgRelease = (runner as unknown as { releasePostgresConnection?: (error: Error) => Promise<void> }).releasePostgresConnection;
  try {
    if (typeof pgRelease === 'function') return await pgRelease.call(runner, new Error('discarded: it may still hold a session lock'));
    if (typeof connection?.destroy === 'function') connection.destroy();
  } catch {
    // Closing a connection that already failed: nothing more to do.
  }
  await runner.release().catch(() => undefined);
}

/**
 * Takes the runner's connection out of the pool for good, without closing it on our side: its session is
 * being killed from another connection, and a statement still in flight on it must hear of that (mysql2
 * fails the statements of a connection the server closed, but never calls back those of a connection it
 * closed itself). mysql2: the pool connection's `_removeFromPool()`; pg: TypeORM's
 * `releasePostgresConnection(error)`, which has pg-pool end and drop the client (pg fails a query in flight
 * on its own end). Elsewhere, a plain `discardConnection`.
 */
export async function leavePool(runner: QueryRunner): Promise<void> {
  const connection = connectionUnder(runner) as { _removeFromPool?: () => void } | undefined;
  const pgRelease = (runner as unknown as { releasePostgresConnection?: (error: Error) => Promise<void> }).releasePostgresConnection;
  if (typeof pgRelease === 'function' || typeof connection?._removeFromPool !== 'function') return discardConnection(runner);
  trackLeftPool((runner as { connection?: object }).connection, connection);
  try {
    connection._removeFromPool();
  } catch {
    // Already out of the pool.
  }
  await runner.release().catch(() => undefined);
}

/** Closes the runner's mysql2 connection if it is still open (after a kill the server could not confirm); a no-op elsewhere. */
export function closeIfOpen(runner: QueryRunner): void {
  const connection = connectionUnder(runner) as { destroy?: () => void; processID?: unknown } | undefined;
  if (connection === undefined || 'processID' in connection || isConnectionClosed(runner)) return;
  try {
    connection.destroy?.();
  } catch {
    // Closing a connection that already failed: nothing more to do.
  }
}

/**
 * Whether taking a connection from the data source's pool now would wait for one to be given back: every
 * connection the pool may open is open and in use. mysql2's pool (`driver.pool`: `config.connectionLimit`,
 * `_allConnections`, `_freeConnections`) and pg-pool (`driver.master`: `options.max`, and its public
 * `totalCount` and `idleCount`). Undefined where the pool is not one of these (a replication cluster,
 * another driver, a data source not initialised yet).
 */
export function poolIsFull(dataSource: LockDataSource): boolean | undefined {
  const driver = (dataSource as { driver?: { pool?: unknown; master?: unknown } }).driver;
  if (isMysql(dataSource.options)) {
    const pool = driver?.pool as { config?: { connectionLimit?: unknown }; _allConnections?: { length?: unknown }; _freeConnections?: { length?: unknown } } | undefined;
    const limit = pool?.config?.connectionLimit;
    const open = pool?._allConnections?.length;
    const free = pool?._freeConnections?.length;
    if (typeof limit !== 'number' || typeof open !== 'number' || typeof free !== 'number') return undefined;
    return limit !== 0 && free === 0 && open >= limit;
  }
  if (dataSource.options.type === 'postgres') {
    const pool = driver?.master as { options?: { max?: unknown }; totalCount?: unknown; idleCount?: unknown } | undefined;
    const max = pool?.options?.max;
    if (typeof max !== 'number' || typeof pool?.totalCount !== 'number' || typeof pool.idleCount !== 'number') return undefined;
    return pool.idleCount === 0 && pool.totalCount >= max;
  }
  return undefined;
}
