import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import { PermitsMismatchError } from '../../errors/permits-mismatch.error';
import { leaseExpiry } from '../../locking/lease-expiry';
import type { PermitGrant, PermitRequest } from '../../locking/lock-lease';
import { permitGrantOf } from '../../locking/permit-grant';
import type { SemaphoreStrategy } from '../../locking/lock-strategy.interface';
import type { SemaphoreInspection } from '../../locking/lock-query';
import type { LockDataSource } from './database-client.type';
import { queryOnDataSource, queryOnRunner, type DirectResult } from './mysql-direct';
import type { RowSemaphoreStatements } from './row-semaphore.sql';
import type { SqlDialect } from './sql-dialect';
import { sqliteDatabaseOf, SqliteWriter, type SqliteDatabase } from './sqlite-writer';

/** What the row semaphore needs from its strategy: the data source, ready, with its dialect and statements. */
export interface RowSemaphoreDeps {
  /** The strategy's name, for errors. */
  readonly name: string;
  readonly dataSource: LockDataSource;
  /** The strategy's `fastPaths`: statements straight to mysql2 where TypeORM's internals allow it. */
  readonly fastPaths: boolean;
  /** Initialises the data source and the tables once; resolves the dialect and the statements. */
  prepare(): Promise<{ dialect: SqlDialect; sql: RowSemaphoreStatements }>;
  /** What to throw for a failed call: a refused grant becomes `LockPermissionDeniedError` naming the semaphores' GRANTs. */
  callError(error: unknown, operation: string, key: string): unknown;
}

/**
 * The statement that opens a grant's transaction. On PostgreSQL it asks for READ COMMITTED whatever the
 * server's `default_transaction_isolation`: each statement then reads what was committed before it, so the
 * sum of the live permits, read after the semaphore's row is locked, counts the grant that held the lock
 * before. Under REPEATABLE READ the snapshot would date from the lock's request, and `FOR UPDATE` on a row
 * changed since would fail with a serialization error.
 */
function beginGrant(dialect: SqlDialect): string {
  return dialect.name === 'postgres' ? 'START TRANSACTION ISOLATION LEVEL READ COMMITTED' : 'START TRANSACTION';
}

/** One row of the `inspect` statement; drivers give numbers as numbers or strings. */
interface LivePermitRow {
  readonly permits: number | string;
  readonly owner: string;
  readonly weight: number | string;
  readonly fencing_token: number | string;
  readonly expires_at: number | string;
  readonly now_ms: number | string;
}

/** What a semaphore's row and its permits' usage say about a request. */
type Decision = { readonly kind: 'grant'; readonly dropExpired: boolean } | { readonly kind: 'full' } | { readonly kind: 'mismatch'; readonly actual: number };

/**
 * Whether `request` may be granted: refused with the other size when the semaphore is in use with
 * another, granted when its weight fits in what the live permits leave.
 */
function decide(request: PermitRequest, semaphorePermits: number, used: number, expired: number): Decision {
  if (semaphorePermits !== request.permits && used > 0) return { kind: 'mismatch', actual: semaphorePermits };
  if (used + request.weight > request.permits) return { kind: 'full' };
  return { kind: 'grant', dropExpired: expired > 0 };
}

/**
 * Counting semaphores in the lock table, for `RowLockStrategy`: a row per semaphore (its size and its last
 * fencing token) and a row per permit held (owner, weight, token, lease end on the database server's
 * clock). A grant is one transaction: the semaphore's row locked (`SELECT … FOR UPDATE` on MySQL/MariaDB
 * and PostgreSQL, `BEGIN IMMEDIATE` on SQLite), the weights of the live permits summed, the next token taken
 * (the larger of the last one + 1 and the server clock in microseconds), the permit inserted. A crashed
 * holder's row stops counting at its lease end, and is deleted by the next grant. Not FIFO: waiters poll
 * with backoff (the database cannot notify).
 */
export class RowSemaphore implements SemaphoreStrategy {
  private sqlite: SqliteWriter | undefined;

  constructor(private readonly deps: RowSemaphoreDeps) {}

  async tryAcquire(request: PermitRequest): Promise<PermitGrant | null> {
    try {
      const { dialect, sql } = await this.deps.prepare();
      const sentAt = Date.now();
      const token = dialect.name === 'sqlite' ? await this.grantOnSqlite(sql, request) : await this.grantInTransaction(dialect, sql, request);
      if (token === null) return null;
      return permitGrantOf(request, token, leaseExpiry(sentAt, request.ttlMs));
    } catch (error) {
      throw this.deps.callError(error, 'acquire', request.key);
    }
  }

  async extend(lease: PermitGrant, ttlMs: number): Promise<PermitGrant | null> {
    try {
      const { sql } = await this.deps.prepare();
      const sentAt = Date.now();
      const changed = await this.write(sql.extend, [ttlMs, lease.key, lease.owner]);
      return changed === 1 ? { ...lease, expiresAt: leaseExpiry(sentAt, ttlMs) } : null;
    } catch (error) {
      throw this.deps.callError(error, 'extend', lease.key);
    }
  }

  async release(lease: PermitGrant): Promise<boolean> {
    try {
      const { sql } = await this.deps.prepare();
      if ((await this.write(sql.releaseLive, [lease.key, lease.owner])) === 1) return true;
      // Expired (or removed): nothing held; its row, if any, goes.
      await this.write(sql.forget, [lease.key, lease.owner]);
      return false;
    } catch (error) {
      throw this.deps.callError(error, 'release', lease.key);
    }
  }

  /**
   * The semaphore's live permits, read in one statement (one snapshot), with its size while any is live.
   * Times come from the server's clock, moved onto this process's by the middle of the round trip. Waiters
   * poll, so there is no queue to list.
   */
  async inspect(key: string): Promise<SemaphoreInspection> {
    try {
      const { sql } = await this.deps.prepare();
      const sentAt = Date.now();
      const rows = (await queryOnDataSource(this.deps.dataSource, sql.inspect, [key], this.deps.fastPaths)).records as LivePermitRow[];
      const localNow = Math.round((sentAt + Date.now()) / 2);
      return {
        ...(rows.length > 0 ? { permits: Number(rows[0].permits) } : {}),
        holders: rows.map((row) => ({
          owner: row.owner,
          weight: Number(row.weight),
          fencingToken: Number(row.fencing_token),
          expiresAt: localNow + (Number(row.expires_at) - Number(row.now_ms)),
        })),
      };
    } catch (error) {
      throw this.deps.callError(error, 'queryPermits', key);
    }
  }

  /** One statement outside a transaction; resolves the rows it changed. */
  private async write(statement: string, parameters: unknown[]): Promise<number> {
    const sqlite = this.sqliteWriter();
    if (sqlite) return sqlite.write((db) => db.prepare(statement).run(...parameters).changes);
    return (await queryOnDataSource(this.deps.dataSource, statement, parameters, this.deps.fastPaths)).affected ?? 0;
  }

  private sqliteWriter(): SqliteWriter | undefined {
    if (this.deps.dataSource.options.type !== 'better-sqlite3') return undefined;
    this.sqlite ??= new SqliteWriter(sqliteDatabaseOf(this.deps.dataSource, this.deps.name), this.deps.name);
    return this.sqlite;
  }

  /**
   * The grant's transaction on SQLite: synchronous, so nothing else of this process runs on the connection
   * meanwhile. A database busy writing (another process, or a transaction of this one) is waited out like
   * any write here: "full" must mean full, or `tryAcquirePermit` would refuse a semaphore with free places.
   */
  private async grantOnSqlite(sql: RowSemaphoreStatements, request: PermitRequest): Promise<number | null> {
    const writer = this.sqliteWriter() as SqliteWriter;
    const outcome = await writer.write((db: SqliteDatabase) => {
      db.prepare(sql.ensure).run(request.key, request.permits);
      const semaphore = db.prepare(sql.lockSemaphore).get(request.key) as { permits: number };
      const usage = db.prepare(sql.usage).get(request.key) as { used: number; expired: number };
      const decision = decide(request, Number(semaphore.permits), Number(usage.used), Number(usage.expired));
      if (decision.kind !== 'grant') return decision;
      const token = Number((db.prepare(sql.nextToken).get(request.permits, request.key) as { fencing_token: number }).fencing_token);
      if (decision.dropExpired) db.prepare(sql.dropExpired).run(request.key);
      db.prepare(sql.insert).run(request.key, request.owner, request.weight, token, request.ttlMs);
      return { kind: 'granted' as const, token };
    });
    if (outcome.kind === 'full') return null;
    if (outcome.kind === 'mismatch') throw new PermitsMismatchError(request.key, this.deps.name, request.permits, outcome.actual);
    return outcome.token;
  }

  /** The grant's transaction on MySQL/MariaDB or PostgreSQL, on a connection of the pool. */
  private async grantInTransaction(dialect: SqlDialect, sql: RowSemaphoreStatements, request: PermitRequest): Promise<number | null> {
    const runner = this.deps.dataSource.createQueryRunner();
    await runner.connect();
    const run = (statement: string, parameters: unknown[]): Promise<DirectResult> => queryOnRunner(runner, statement, parameters, this.deps.fastPaths);
    try {
      for (let attempt = 0; attempt < 2; attempt += 1) {
        await run(beginGrant(dialect), []);
        try {
          const row = (await run(sql.lockSemaphore, [request.key])).records[0] as { permits: number } | undefined;
          if (!row) {
            // A semaphore never seen: its row is made outside the transaction (on MySQL/MariaDB two
            // transactions inserting the same missing key under their gap locks would deadlock), then locked.
            await run('ROLLBACK', []);
            await run(sql.ensure, [request.key, request.permits]);
            continue;
          }
          const usage = (await run(sql.usage, [request.key])).records[0] as { used: number | string; expired: number | string };
          const decision = decide(request, Number(row.permits), Number(usage.used), Number(usage.expired));
          if (decision.kind === 'mismatch') throw new PermitsMismatchError(request.key, this.deps.name, request.permits, decision.actual);
          if (decision.kind === 'full') {
            await run('ROLLBACK', []);
            return null;
          }
          const token = dialect.tokenOf(await run(sql.nextToken, [request.permits, request.key]));
          if (decision.dropExpired) await run(sql.dropExpired, [request.key]);
          await run(sql.insert, [request.key, request.owner, request.weight, token, request.ttlMs]);
          await run('COMMIT', []);
          return token;
        } catch (error) {
          await run('ROLLBACK', []).catch(() => undefined);
          throw error;
        }
      }
      throw new LockBackendUnavailableError(this.deps.name, 'acquire (the semaphore row could not be made)', 0, { key: request.key });
    } finally {
      await runner.release();
    }
  }
}
