import type { DataSourceOptions } from 'typeorm';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { loadPeerDependency } from '../load-peer-dependency';
import { assertDatabaseDriver } from './database-driver';
import { connectBoundedPgClient } from './pg-connect-bound';
import type { LockDataSource } from './database-client.type';
import { connectionsClosed, destroyPoolSockets, dropConnections, quietCluster, poolConnections } from './pool-sockets';
import { untilGivenUp } from '../../locking/until-given-up';

/** The application's data source (never destroyed by the strategy), or one the strategy created (destroyed on close). */
export interface OwnedDataSource {
  readonly dataSource: LockDataSource;
  readonly owned: boolean;
}

/**
 * Uses the application's TypeORM `DataSource`, or, when given only options, creates one. The second case
 * opens a pool of its own, next to the application's: that is why it must be asked for explicitly.
 */
export function resolveDataSource(dataSource: LockDataSource | undefined, connection: DataSourceOptions | undefined, strategy: string): OwnedDataSource {
  if (dataSource !== undefined && connection !== undefined) {
    throw new InvalidLockOptionsError('dataSource', 'give either `dataSource` (your TypeORM DataSource) or `connection` (options for a separate pool), not both.');
  }
  if (dataSource !== undefined) {
    if (typeof (dataSource as { createQueryRunner?: unknown }).createQueryRunner !== 'function') {
      throw new InvalidLockOptionsError('dataSource', 'expected a TypeORM DataSource.');
    }
    // A data source nobody initialised yet has not loaded its driver: it would fail at the first lock.
    if (!dataSource.isInitialized) assertDatabaseDriver(dataSource.options.type, strategy);
    return { dataSource, owned: false };
  }
  if (connection === undefined || typeof connection !== 'object') {
    throw new InvalidLockOptionsError('dataSource', 'give `dataSource` (your TypeORM DataSource, e.g. injected with getDataSourceToken()) or `connection` options.');
  }
  const { DataSource } = loadPeerDependency<typeof import('typeorm')>('typeorm', strategy);
  assertDatabaseDriver(connection.type, strategy);
  return { dataSource: new DataSource(withLockPoolDefaults(connection, strategy)), owned: true };
}

/**
 * How long mysql2's replication cluster keeps a member offline after 5 failed connects before it tries it
 * again, for a cluster the strategy opens: its default (0) drops the member for good, and a master dropped
 * so (the server restarted) fails every later call of the process.
 */
const REPLICA_OFFLINE_MS = 1_000;

/**
 * Defaults for a pool the strategy opens for itself; an explicit value is kept. On PostgreSQL, a bound on
 * each connect (see `connectBoundedPgClient`) where neither `connectTimeoutMS` nor `extra` sets one. On
 * MySQL/MariaDB:
 * - `trace: false`: mysql2 otherwise captures a stack trace on every statement for the "long stack traces"
 *   of its errors, which showed in CPU profiles of the pessimistic strategy (its transaction runs
 *   statements through TypeORM). The lock's statements are few and fixed, and their errors reach callers
 *   wrapped in this library's typed errors, so those traces tell nobody anything.
 * - `replication.restoreNodeTimeout` (see REPLICA_OFFLINE_MS): locks work again once the server is back.
 */
export function withLockPoolDefaults(connection: DataSourceOptions, strategy: string): DataSourceOptions {
  if (connection.type === 'postgres') {
    const extra = connection.extra as { Client?: unknown; connectionTimeoutMillis?: unknown } | undefined;
    // A driver module of the user's (`driver`, `nativeDriver`) makes clients of its own.
    if (connection.connectTimeoutMS !== undefined || extra?.Client !== undefined || extra?.connectionTimeoutMillis !== undefined || connection.driver || connection.nativeDriver) return connection;
    const Client = connectBoundedPgClient(strategy);
    return Client ? { ...connection, extra: { ...extra, Client } } : connection;
  }
  if (connection.type !== 'mysql' && connection.type !== 'mariadb') return connection;
  const { replication } = connection;
  return {
    trace: false,
    ...connection,
    ...(replication ? { replication: { ...replication, restoreNodeTimeout: replication.restoreNodeTimeout ?? REPLICA_OFFLINE_MS } } : {}),
  };
}

/**
 * Initialisations under way, by data source: a second caller waits for the first rather than opening a
 * second pool, and a close waits for it (see `destroyOwnDataSource`).
 */
const initializing = new WeakMap<LockDataSource, Promise<unknown>>();

/** Initialises the data source if nobody did yet; once, however many callers ask at the same time. */
export function ensureInitialized(dataSource: LockDataSource): Promise<void> {
  if (dataSource.isInitialized) return Promise.resolve();
  let started = initializing.get(dataSource);
  if (!started) {
    started = dataSource.initialize().finally(() => initializing.delete(dataSource));
    initializing.set(dataSource, started);
  }
  return started.then(() => undefined);
}

/**
 * Destroys a data source the strategy created, and resolves once the server has closed each of its
 * connections: each says goodbye, and the drivers call back before the server answers (mysql2 once the
 * goodbye is written, pg-pool once its clients are ended), which a frozen server never does. Once `giveUp`
 * aborts (the close is past its bound), every socket of the pools is dropped at once instead (see
 * `destroyPoolSockets`), so that nothing keeps the process alive. A data source still opening its pool is
 * closed once it is open; past `giveUp` the driver's connect timeout ends that wait (mysql2: 10 s by
 * default; pg: `connectTimeoutMS`, none by default).
 */
export async function destroyOwnDataSource(dataSource: LockDataSource, giveUp: AbortSignal | undefined): Promise<void> {
  const starting = initializing.get(dataSource);
  if (starting) {
    const opened = starting.then(
      () => true,
      () => false,
    );
    await untilGivenUp(opened, giveUp);
    if (giveUp?.aborted) {
      void opened.then((open) => (open && dataSource.isInitialized ? dataSource.destroy() : undefined)).catch(() => undefined);
      return;
    }
  }
  if (!dataSource.isInitialized) return;
  const connections = poolConnections(dataSource);
  const drop = (): void => {
    destroyPoolSockets(dataSource);
    dropConnections(connections);
  };
  quietCluster(dataSource);
  const destroying = dataSource.destroy();
  // Without a bound to give up at (a close called directly, not by a lock service), the drivers' word is
  // taken: waiting for the server's goodbye could wait for good.
  if (!giveUp) return destroying;
  const closed = destroying.then(() => connectionsClosed(connections));
  if (giveUp.aborted) drop();
  else giveUp.addEventListener('abort', drop, { once: true });
  try {
    await untilGivenUp(closed, giveUp);
  } finally {
    giveUp.removeEventListener('abort', drop);
  }
}


/**
 * Runs `CREATE … IF NOT EXISTS` statements. On PostgreSQL two sessions creating the same table at once can
 * both pass the "not exists" check, and the loser fails on the catalog's unique index (23505) or with
 * "already exists" (42P07, 42710): the table is there then, so the statement is run once more and passes.
 */
export async function runDdl(dataSource: LockDataSource, statements: readonly string[]): Promise<void> {
  for (const statement of statements) {
    try {
      await dataSource.query(statement);
    } catch (error) {
      const e = error as { code?: unknown; driverError?: { code?: unknown } };
      const code = String(e?.driverError?.code ?? e?.code ?? '');
      if (dataSource.options.type !== 'postgres' || !['23505', '42P07', '42710'].includes(code)) throw error;
      await dataSource.query(statement);
    }
  }
}
