import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import type { LockDataSource } from './database-client.type';

/** What the semaphore uses of a better-sqlite3 `Database`. */
export interface SqliteDatabase {
  readonly inTransaction: boolean;
  exec(sql: string): unknown;
  pragma(source: string, options?: { simple: boolean }): unknown;
  prepare(sql: string): { run(...parameters: unknown[]): { changes: number }; get(...parameters: unknown[]): unknown };
}

/** The better-sqlite3 connection under an initialised TypeORM data source (TypeORM keeps one per data source). */
export function sqliteDatabaseOf(dataSource: LockDataSource, strategy: string): SqliteDatabase {
  const connection = (dataSource as { driver?: { databaseConnection?: unknown } }).driver?.databaseConnection;
  if (typeof (connection as SqliteDatabase | undefined)?.prepare !== 'function') {
    throw new InvalidLockOptionsError('dataSource', `the ${strategy} strategy's semaphores need a TypeORM better-sqlite3 data source.`);
  }
  return connection as SqliteDatabase;
}

/** How long a write waits for the database to be free before it fails, in ms, and between its tries. */
const WRITE_PATIENCE_MS = 10_000;
const WRITE_RETRY_MS = 5;

const isBusy = (error: unknown): boolean => /SQLITE_BUSY|SQLITE_LOCKED/.test(String((error as { code?: unknown } | undefined)?.code));

/**
 * Writes of the SQLite semaphore, each a synchronous `BEGIN IMMEDIATE` transaction (better-sqlite3 runs
 * statements synchronously, so nothing else of this process runs on the connection meanwhile). The
 * database's single writer lock is never waited for synchronously: a synchronous wait would also stop this
 * process's own transactions (on other connections, or awaiting on this one) from reaching their COMMIT, and
 * hold everything up to the busy timeout. A busy database is "not now" instead: tried again after a
 * moment, with the event loop free.
 */
export class SqliteWriter {
  private busyTimeout: number | undefined;

  constructor(
    private readonly db: SqliteDatabase,
    private readonly strategy: string,
  ) {}

  /** Runs `fn` in a write transaction now, or resolves undefined when the database is busy writing. */
  tryTransaction<T>(fn: (db: SqliteDatabase) => T): T | undefined {
    const { db } = this;
    // A transaction of this process is open on the connection (awaiting between its statements): ours would join it.
    if (db.inTransaction) return undefined;
    this.busyTimeout ??= Number(db.pragma('busy_timeout', { simple: true }));
    db.pragma('busy_timeout = 0');
    try {
      db.exec('BEGIN IMMEDIATE');
    } catch (error) {
      if (isBusy(error)) return undefined;
      throw error;
    } finally {
      db.pragma(`busy_timeout = ${this.busyTimeout}`);
    }
    try {
      const result = fn(db);
      db.exec('COMMIT');
      return result;
    } catch (error) {
      if (db.inTransaction) db.exec('ROLLBACK');
      throw error;
    }
  }

  /** Runs `fn` in a write transaction as soon as the database is free (see the class); resolves its result. */
  async write<T>(fn: (db: SqliteDatabase) => T): Promise<T> {
    const started = Date.now();
    for (;;) {
      const done = this.tryTransaction((db) => ({ value: fn(db) }));
      if (done) return done.value;
      if (Date.now() - started > WRITE_PATIENCE_MS) throw new LockBackendUnavailableError(this.strategy, 'write (the SQLite database stayed busy)', Date.now() - started);
      await new Promise((resolve) => setTimeout(resolve, WRITE_RETRY_MS));
    }
  }
}
