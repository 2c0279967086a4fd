import type { DataSourceOptions } from 'typeorm';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { loadPeerDependency } from '../load-peer-dependency';
import { assertDatabaseDriver } from './database-driver';
import type { LockDataSource } from './database-client.type';
import { destroyPoolSockets } from './typeorm-internals';
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
  return { dataSource: new DataSource(withLockPoolDefaults(connection)), owned: true };
}

/**
 * Defaults for a pool the strategy opens for itself. On MySQL/MariaDB, `trace: false`: mysql2 otherwise
 * captures a stack trace on every statement for the "long stack traces" of its errors, which showed in
 * CPU profiles of the pessimistic strategy (its transaction runs statements through TypeORM). The lock's
 * statements are few and fixed, and their errors reach callers wrapped in this library's typed errors,
 * so those traces tell nobody anything. An explicit `trace` is kept.
 */
export function withLockPoolDefaults(connection: DataSourceOptions): DataSourceOptions {
  if (connection.type !== 'mysql' && connection.type !== 'mariadb') return connection;
  return { trace: false, ...connection };
}

/**
 * Destroys a data source the strategy created. Gracefully: each connection says goodbye and waits for the
 * server's answer, which a frozen server never sends. Once `giveUp` aborts (the close is past its bound),
 * every socket of the pool is dropped at once instead (see `destroyPoolSockets`), so that nothing keeps the
 * process alive.
 */
export async function destroyOwnDataSource(dataSource: LockDataSource, giveUp: AbortSignal | undefined): Promise<void> {
  if (!dataSource.isInitialized) return;
  const destroying = dataSource.destroy();
  if (!giveUp) return destroying;
  const drop = (): void => destroyPoolSockets(dataSource);
  if (giveUp.aborted) drop();
  else giveUp.addEventListener('abort', drop, { once: true });
  try {
    await untilGivenUp(destroying, giveUp);
  } finally {
    giveUp.removeEventListener('abort', drop);
  }
}

/** Initialises the data source if nobody did yet. */
export async function ensureInitialized(dataSource: LockDataSource): Promise<void> {
  if (!dataSource.isInitialized) await dataSource.initialize();
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
