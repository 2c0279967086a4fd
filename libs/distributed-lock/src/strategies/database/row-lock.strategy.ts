import type { DataSourceOptions } from 'typeorm';
import { InvalidLockKeyError } from '../../errors/invalid-lock-key.error';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import type { LeaseGrant, LockRequest } from '../../locking/lock-lease';
import { assertDuration, assertKnownKeys, describe } from '../../locking/lock-options';
import { assertFastPaths } from '../fast-paths-option';
import { handOverLimits, type HandOverLimits, type LocalHandOverOption } from '../../locking/hand-over-limits';
import type { LockStrategy, LockStrategyCapabilities } from '../../locking/lock-strategy.interface';
import type { KeyListing, LockInspection } from '../../locking/lock-query';
import { lookAtLockTable } from './lock-table-inspection';
import { leaseExpiry } from '../../locking/lease-expiry';
import type { LockDataSource } from './database-client.type';
import { destroyOwnDataSource, ensureInitialized, resolveDataSource } from './database-connection';
import { createMissingTables } from './ensure-tables';
import { sqlCallError } from './sql-permission';
import { assertKeyDistinct, paddingMigration } from './lock-key-collation';
import { leaseClockDdl, leaseTableDdl, LOCK_TABLES, MAX_SQL_KEY_LENGTH, SQL_IDENTIFIER } from './lock-table.sql';
import { LockQueue } from './lock-queue';
import { LOCK_QUEUE_TABLE, lockQueueDdl, lockQueueStatements, NO_PLACE, type LockQueueStatements } from './lock-queue.sql';
import { queryOnDataSource, type DirectResult } from './mysql-direct';
import { breakLockTableHolds } from './lock-table-break';
import { listKeysQuery, rowLockStatements, type RowLockStatements } from './row-lock.sql';
import { dialectOf, withServerFeatures, type SqlDialect } from './sql-dialect';
import { strategyName } from '../strategy-name';
import { RowSemaphore } from './row-semaphore';
import { rowSemaphoreStatements, semaphoreTablesDdl, SEMAPHORE_TABLES, type RowSemaphoreStatements } from './row-semaphore.sql';

/** Options of the row (lock table) strategy. */
export interface RowLockStrategyOptions {
  /** Your TypeORM DataSource (MySQL, MariaDB, PostgreSQL, or SQLite via better-sqlite3). Never destroyed by the strategy. */
  readonly dataSource?: LockDataSource;
  /** Or options for a separate pool that the strategy creates and destroys. */
  readonly connection?: DataSourceOptions;
  /** Name in messages and events. Default "database". */
  readonly name?: string;
  /** Lock table. Default "distributed_lock_leases". */
  readonly table?: string;
  /**
   * The lock table's queue of waiters (one row per waiting contender, see docs/strategies/lock-table.md),
   * made on first use with `ensureTable`. Default "distributed_lock_queue".
   */
  readonly queueTable?: string;
  /**
   * Bounded barging: while others wait, a contender that has no place in the queue yet (usually the one that
   * just released, already awake) may take the free lock as long as the queue's head has been head for less
   * than this, in ms; past it the head gets the lock. 0: strictly in turn (a free lock goes to the head, whose
   * next try may be a few ms away). Default 20.
   */
  readonly bargeWindowMs?: number;
  /**
   * The semaphores' tables (see `LockService.acquirePermit`), made on first use with `ensureTable`: one row
   * per semaphore and one per permit held. Default `{ semaphores: "distributed_lock_semaphores", permits:
   * "distributed_lock_permits" }`.
   */
  readonly semaphoreTables?: { readonly semaphores?: string; readonly permits?: string };
  /** Create the table if it is missing (CREATE TABLE IF NOT EXISTS) on first use. Default true. */
  readonly ensureTable?: boolean;
  /**
   * Local hand-over: contenders of one process for a key wait in one line, only the first polls the
   * table, and a release hands the row straight to the next one (one UPDATE, a new fencing token) instead
   * of freeing it for the next poll; at most `passes` times in a row and within `windowMs` of taking it
   * from the table, so other processes get their turn. `false` turns it off. Default
   * `{ passes: 64, windowMs: 50 }`.
   */
  readonly localHandover?: LocalHandOverOption;
  /**
   * Send the lock's statements straight to TypeORM's mysql2 or pg pool (found in TypeORM's internals, see
   * `typeorm-internals.ts`; on PostgreSQL as named statements, prepared once per connection). `false`:
   * through a TypeORM query runner, its public API, slower; for a TypeORM version whose internals this
   * path no longer fits, or a pooler that cannot keep prepared statements. Default true.
   */
  readonly fastPaths?: boolean;
}

/** The barging window of `bargeWindowMs` when not set, in ms. */
const DEFAULT_BARGE_WINDOW_MS = 20;

const OPTION_KEYS = ['dataSource', 'connection', 'name', 'table', 'queueTable', 'bargeWindowMs', 'semaphoreTables', 'ensureTable', 'localHandover', 'fastPaths'];

/**
 * Locks as rows of a table with a unique key, with what a plain lock table lacks: a lease on the
 * database server's clock (a crashed holder's row is taken over once expired), an owner check on release
 * and extend, a hold count for reentrancy, and a fencing token that only grows (a new row starts from the
 * server's clock in microseconds, a takeover adds one).
 *
 * Acquire is one conditional UPDATE that takes over a free or expired row (or re-enters our own), and an
 * INSERT for a key never seen; each returns its fencing token in the same round trip. Release frees our
 * row (the row stays, so the token keeps growing). Waiting polls (the database cannot notify), in turn: a
 * waiter refused once takes a ticket in the queue table, and a free row goes to the oldest live ticket of
 * its key (see LockQueue).
 */
export class RowLockStrategy implements LockStrategy {
  readonly name: string;
  readonly capabilities: LockStrategyCapabilities;
  /**
   * Counting semaphores in two tables of their own (`LockService.acquirePermit`): leased, fenced, polled (not
   * FIFO). On MySQL/MariaDB, PostgreSQL and SQLite.
   */
  readonly semaphore: RowSemaphore;
  readonly handOverLimits: HandOverLimits;
  private readonly dataSource: LockDataSource;
  private readonly ownsDataSource: boolean;
  private readonly table: string;
  private readonly queueTable: string;
  private readonly queue: LockQueue;
  private readonly bargeWindowMs: number;
  private readonly ensureTable: boolean;
  private readonly fastPaths: boolean;
  private ready: Promise<Prepared> | undefined;

  constructor(options: RowLockStrategyOptions) {
    const raw: unknown = options;
    assertKnownKeys(raw, OPTION_KEYS, 'RowLockStrategy options');
    this.name = strategyName(options.name, 'database');
    this.table = options.table ?? LOCK_TABLES.leases;
    if (!SQL_IDENTIFIER.test(this.table)) throw new InvalidLockOptionsError('table', `expected a plain SQL identifier, got ${describe(this.table)}.`);
    this.queueTable = options.queueTable ?? LOCK_QUEUE_TABLE;
    if (!SQL_IDENTIFIER.test(this.queueTable)) throw new InvalidLockOptionsError('queueTable', `expected a plain SQL identifier, got ${describe(this.queueTable)}.`);
    this.bargeWindowMs = assertDuration(options.bargeWindowMs === undefined ? DEFAULT_BARGE_WINDOW_MS : options.bargeWindowMs, 'bargeWindowMs', 0);
    this.queue = new LockQueue({ ready: () => this.prepare(), run: (sql, parameters) => this.run(sql, parameters) });
    this.ensureTable = options.ensureTable ?? true;
    const tables = options.semaphoreTables ?? {};
    assertKnownKeys(tables, ['semaphores', 'permits'], 'semaphoreTables');
    const semaphores = tables.semaphores ?? SEMAPHORE_TABLES.semaphores;
    const permits = tables.permits ?? SEMAPHORE_TABLES.permits;
    for (const [option, table] of [['semaphoreTables.semaphores', semaphores], ['semaphoreTables.permits', permits]] as const) {
      if (!SQL_IDENTIFIER.test(table)) throw new InvalidLockOptionsError(option, `expected a plain SQL identifier, got ${describe(table)}.`);
    }
    // Table names compare without case (SQLite, MySQL on some systems); the lock table's SQLite clock is one too.
    const taken = [this.table, `${this.table}_clock`, semaphores, permits].find((other) => other.toLowerCase() === this.queueTable.toLowerCase());
    if (taken !== undefined) throw new InvalidLockOptionsError('queueTable', `must differ from the strategy's other tables, got ${describe(this.queueTable)} (as ${describe(taken)}).`);
    this.fastPaths = assertFastPaths(options.fastPaths);
    this.handOverLimits = handOverLimits(options.localHandover);
    const resolved = resolveDataSource(options.dataSource, options.connection, this.name);
    this.dataSource = resolved.dataSource;
    this.ownsDataSource = resolved.owned;
    // An unsupported database is refused here, before any server is touched.
    dialectOf(this.dataSource, this.name);
    this.capabilities = Object.freeze({
      fencing: true,
      fifo: false,
      sharedLocks: false,
      crossProcess: true,
      semaphores: Object.freeze({ fifo: false, fencing: true }),
    });
    let semaphoreReady: Promise<{ dialect: SqlDialect; sql: RowSemaphoreStatements }> | undefined;
    this.semaphore = new RowSemaphore({
      name: this.name,
      dataSource: this.dataSource,
      fastPaths: this.fastPaths,
      // The semaphores' tables are looked for (and made if missing) at the first permit, not with the lock
      // table: an application of locks only never has them, and its database user needs no grant on them.
      prepare: () => {
        semaphoreReady ??= this.prepare()
          .then(async ({ dialect }) => {
            if (this.ensureTable) {
              const [semaphoresDdl, permitsDdl] = semaphoreTablesDdl(dialect, semaphores, permits);
              await createMissingTables(this.dataSource, dialect, [
                { table: semaphores, statements: [semaphoresDdl] },
                { table: permits, statements: [permitsDdl] },
              ]);
            }
            return { dialect, sql: rowSemaphoreStatements(dialect, semaphores, permits) };
          })
          .catch((error: unknown) => {
            semaphoreReady = undefined;
            throw error;
          });
        return semaphoreReady;
      },
      callError: (error, operation, key) =>
        sqlCallError(error, {
          strategy: this.name,
          operation,
          key,
          tables: [semaphores, { table: permits, privileges: 'SELECT, INSERT, UPDATE, DELETE' }],
        }),
    });
  }

  validateKey(key: string): void {
    if (key.length > MAX_SQL_KEY_LENGTH) {
      throw new InvalidLockKeyError(key, `the ${this.name} strategy stores keys of at most ${MAX_SQL_KEY_LENGTH} characters (got ${key.length}); hash long identifiers`);
    }
  }

  async tryAcquire(request: LockRequest): Promise<LeaseGrant | null> {
    try {
      if (!this.queue.mayTake(request)) {
        // Behind the head: where the place stands now, before touching the lease row.
        await this.queue.refused(request);
        if (!this.queue.mayTake(request)) return null;
      }
      const grant = await this.take(request);
      if (grant) void this.queue.leave(request);
      else await this.queue.refused(request);
      return grant;
    } catch (error) {
      throw this.callError(error, 'acquire', request.key);
    }
  }

  private async take(request: LockRequest): Promise<LeaseGrant | null> {
    const { dialect, sql, padding } = await this.prepare();
    assertKeyDistinct(request.key, this.table, padding);
    const sentAt = Date.now();
    // Most keys have a row (released rows stay, keeping their token): take it over if free or expired, and
    // no older waiter is in the queue.
    const ticket = this.queue.ticketOf(request);
    let taken: DirectResult;
    try {
      taken =
        ticket === undefined && this.bargeWindowMs > 0
          ? await this.run(sql.takeOverBarging, [request.owner, request.owner, request.owner, request.ttlMs, request.owner, request.key, request.owner, request.key, this.bargeWindowMs])
          : await this.run(sql.takeOverInTurn, [request.owner, request.owner, request.owner, request.ttlMs, request.owner, request.key, request.owner, request.key, ticket ?? NO_PLACE]);
    } catch (error) {
      // On InnoDB the take-over share-locks the queue rows it reads, and may be the one a deadlock rolls back:
      // it took nothing, as a refusal; the wait tries again.
      if (dialect.isDeadlock(error)) return null;
      throw error;
    }
    if (dialect.changedRows(taken) === 1) return this.grantOf(request, dialect.tokenOf(taken), sentAt);
    try {
      const inserted = await this.run(sql.insert, [request.key, request.owner, request.ttlMs]);
      return dialect.changedRows(inserted) === 1 ? this.grantOf(request, dialect.tokenOf(inserted), sentAt) : null;
    } catch (error) {
      // Someone else holds the row (it existed and was live, or was inserted meanwhile).
      if (dialect.isDuplicateKey(error)) return null;
      throw error;
    }
  }

  async joinQueue(request: LockRequest, pollGapMs: number): Promise<void> {
    try {
      await this.queue.join(request, pollGapMs);
    } catch (error) {
      throw this.callError(error, 'acquire', request.key);
    }
  }

  nextTryIn(request: LockRequest): number | undefined {
    return this.queue.nextTryIn(request);
  }

  async leaveQueue(request: LockRequest): Promise<void> {
    await this.queue.leave(request);
  }

  async transfer(lease: LeaseGrant, next: LockRequest): Promise<LeaseGrant | null> {
    const { dialect, sql } = await this.prepare();
    const sentAt = Date.now();
    const moved = await this.run(sql.transfer, [next.owner, next.ttlMs, lease.key, lease.owner]);
    return dialect.changedRows(moved) === 1 ? this.grantOf(next, dialect.tokenOf(moved), sentAt) : null;
  }

  async extend(lease: LeaseGrant, ttlMs: number): Promise<LeaseGrant | null> {
    const { sql } = await this.prepare();
    const sentAt = Date.now();
    let result: DirectResult;
    try {
      result = await this.run(sql.extend, [ttlMs, lease.key, lease.owner]);
    } catch (error) {
      throw this.callError(error, 'extend', lease.key);
    }
    return result.affected === 1 ? { ...lease, expiresAt: leaseExpiry(sentAt, ttlMs) } : null;
  }

  async release(lease: LeaseGrant): Promise<boolean> {
    try {
      const { sql } = await this.prepare();
      // The row stays (free, expired at 0) so that the key's fencing token keeps growing.
      if ((await this.run(sql.releaseLast, [lease.key, lease.owner])).affected === 1) return true;
      return (await this.run(sql.releaseOne, [lease.key, lease.owner])).affected === 1;
    } catch (error) {
      throw this.callError(error, 'release', lease.key);
    }
  }

  /**
   * The key's live holder and the first live places of its queue (INSPECT_WAITERS_LIMIT), read in one
   * statement, so both come from one snapshot. Times come from the server's clock, moved onto this
   * process's by the middle of the round trip: off by half of it at most.
   */
  async inspect(key: string): Promise<LockInspection> {
    try {
      const { sql } = await this.prepare();
      return await lookAtLockTable((statement, parameters) => this.run(statement, parameters), sql.inspect, key);
    } catch (error) {
      throw this.callError(error, 'query', key);
    }
  }

  /**
   * The keys under `prefix` with a live holder, in the table's order, a page at a time: the cursor is the
   * last key of the previous page. One indexed range read of at most `limit` + 1 rows per page.
   */
  async listKeys(prefix: string, page: { readonly cursor?: string; readonly limit: number }): Promise<KeyListing> {
    try {
      const { dialect } = await this.prepare();
      const { sql, parameters } = listKeysQuery(dialect, this.table, prefix, page.cursor, page.limit);
      const result = await this.run(sql, parameters);
      const found = (result.records as Array<{ lock_key: string }>).map((row) => row.lock_key);
      const listed = found.slice(0, page.limit);
      const keys = listed.filter((key) => key.startsWith(prefix));
      return found.length > page.limit ? { keys, next: listed[listed.length - 1] } : { keys };
    } catch (error) {
      throw this.callError(error, 'queryPrefix', prefix);
    }
  }

  /**
   * Frees the row of the holder a look finds, as its last release would (`breakLockTableHolds`). The next
   * grant takes the row over with a higher token; the broken holder learns at its next extension or release.
   */
  async breakLock(key: string, signal?: AbortSignal): Promise<LockInspection['holders']> {
    try {
      const { sql } = await this.prepare();
      return await breakLockTableHolds(this.dataSource, this.fastPaths, sql, key, signal);
    } catch (error) {
      throw this.callError(error, 'breakLock', key);
    }
  }

  /** A refused grant becomes `LockPermissionDeniedError` naming the GRANT to run. */
  private callError(error: unknown, operation: string, key?: string): unknown {
    return sqlCallError(error, { strategy: this.name, operation, key, tables: [this.table, { table: this.queueTable, privileges: 'SELECT, INSERT, UPDATE, DELETE' }] });
  }

  async ping(): Promise<void> {
    await ensureInitialized(this.dataSource);
    await this.dataSource.query('SELECT 1');
  }

  /** Initialises the data source and prepares the statements and tables the first acquisition would. */
  async warmUp(): Promise<void> {
    await this.prepare();
  }

  async close(giveUp?: AbortSignal): Promise<void> {
    if (this.ownsDataSource) await destroyOwnDataSource(this.dataSource, giveUp);
  }

  /**
   * Deletes rows that have been free or expired for `idleMs`. Not needed for correctness (a free or
   * expired row is taken over); for tables with many one-off keys. A key whose row was swept starts its
   * fencing tokens again from the server clock in microseconds, which stays above the old ones. Also deletes
   * the places in the queue of waiters whose lease ended that long ago (waiters that died). Resolves the
   * number of lock rows deleted.
   */
  async sweepIdle(idleMs: number): Promise<number> {
    const { dialect } = await this.prepare();
    const result = await this.run(dialect.bind(`DELETE FROM ${dialect.quote(this.table)} WHERE expires_at <= ${dialect.nowMs} - ?`), [idleMs]);
    await this.run(dialect.bind(`DELETE FROM ${dialect.quote(this.queueTable)} WHERE expires_at <= ${dialect.nowMs} - ?`), [idleMs]);
    return result.affected ?? 0;
  }

  private run(query: string, parameters: unknown[]): Promise<DirectResult> {
    return queryOnDataSource(this.dataSource, query, parameters, this.fastPaths);
  }

  private prepare(): Promise<Prepared> {
    this.ready ??= (async () => {
      await ensureInitialized(this.dataSource);
      const dialect = await withServerFeatures(this.dataSource, dialectOf(this.dataSource, this.name));
      if (this.ensureTable) {
        await createMissingTables(this.dataSource, dialect, [
          { table: this.table, statements: [leaseTableDdl(dialect, this.table), ...leaseClockDdl(dialect, this.table)] },
          { table: this.queueTable, statements: lockQueueDdl(dialect, this.queueTable) },
        ]);
      }
      const padding = await paddingMigration(this.dataSource, dialect, this.table);
      return { dialect, sql: rowLockStatements(dialect, this.table, this.queueTable), queue: lockQueueStatements(dialect, this.queueTable), padding };
    })().catch((error: unknown) => {
      this.ready = undefined;
      throw error;
    });
    return this.ready;
  }

  private grantOf(request: LockRequest, token: number, sentAt: number): LeaseGrant {
    return { key: request.key, owner: request.owner, mode: request.mode, fencingToken: token, expiresAt: leaseExpiry(sentAt, request.ttlMs) };
  }
}

/** What the strategy prepares once: the dialect, its statements, and the key padding check. */
interface Prepared {
  readonly dialect: SqlDialect;
  readonly sql: RowLockStatements;
  readonly queue: LockQueueStatements;
  readonly padding: string | undefined;
}
