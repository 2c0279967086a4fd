import type { EntityManager, QueryRunner } from 'typeorm';
import { InvalidLockKeyError } from '../../errors/invalid-lock-key.error';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { LockCommitFailedError } from '../../errors/lock-commit-failed.error';
import type { LeaseGrant, LockRequest, WaitBudget } from '../../locking/lock-lease';
import type { LockInspection } from '../../locking/lock-query';
import { assertKnownKeys, describe } from '../../locking/lock-options';
import { assertFastPaths } from '../fast-paths-option';
import type { LeaseLostListener, LockStrategy, LockStrategyCapabilities, ReleaseOutcome } from '../../locking/lock-strategy.interface';
import type { LockDataSource } from './database-client.type';
import { maxHeldConnectionsFor } from './connection-slots';
import { markHold, rowHolderMarker, unmarkHold } from './row-holder-marker';
import { rowLockOperatorCalls } from './row-lock-operator';
import { PinnedLocks, pinnedLock, type PinnedLock } from './pinned-locks';
import { poolWaitDeadline } from './pool-connection';
import { poolSizeOf } from './pool-size';
import { endedUnder, isConnectionError, isNotSent, rollbackAndRelease } from './held-connection';
import { destroyOwnDataSource, ensureInitialized, resolveDataSource } from './database-connection';
import { createMissingTables } from './ensure-tables';
import { sqlCallError } from './sql-permission';
import { assertKeyDistinct, paddingMigration } from './lock-key-collation';
import { fenceTableDdl, fenceTableOf, LOCK_TABLES, MAX_SQL_KEY_LENGTH, rowTableDdl, SQL_IDENTIFIER } from './lock-table.sql';
import { queryOnDataSource, queryOnRunner } from './mysql-direct';
import { beginLockTransaction, commitLockTransaction } from './runner-transaction';
import { connectionIdOf, discardConnection, isConnectionClosed } from './typeorm-internals';
import { pessimisticStatements, type PessimisticStatements } from './pessimistic-lock.sql';
import { dialectOf, withServerFeatures, type SqlDialect } from './sql-dialect';
import { budgetAborted, budgetWithin } from '../../locking/wait-for-wake';
import { strategyName } from '../strategy-name';
import { PESSIMISTIC_OPTION_KEYS, type PessimisticLockStrategyOptions } from './pessimistic-lock.options';

export type { PessimisticLockStrategyOptions } from './pessimistic-lock.options';

/** A grant of the pessimistic strategy: the lock is a transaction, and its EntityManager writes inside it. */
export interface PessimisticLeaseGrant extends LeaseGrant {
  /** Writes made through it commit together with the release, or roll back if the section fails or the lease runs out. */
  readonly manager: EntityManager;
}

/** How many keys with a known lock row are remembered before the memory starts over. */
const KNOWN_ROWS_LIMIT = 10_000;

/** FOR UPDATE found no row for the key: it was deleted after we last saw it. */
class MissingLockRow extends Error {
  constructor(key: string) {
    super(`lock row for "${key}" is missing`);
  }
}

/**
 * An exclusive lock on a row found by its primary key, locked with `SELECT … FOR UPDATE` in a
 * transaction that stays open for the whole critical section; release is COMMIT. Always a row lock,
 * never a table lock (the key is the primary key, so InnoDB locks one index record). A crashed holder's
 * lock is freed by the server when its connection dies; a live holder past its lease is rolled back.
 *
 * The transaction is the lock's: run the protected writes through the grant's `manager` (see
 * `lockTransaction(lock)`) and they commit atomically with the release, never before it.
 */
export class PessimisticLockStrategy implements LockStrategy {
  readonly name: string;
  readonly capabilities: LockStrategyCapabilities = Object.freeze({ fencing: true, fifo: false, sharedLocks: false, crossProcess: true, transactional: true });
  readonly signalsServerAnswer = true;
  private readonly dataSource: LockDataSource;
  private readonly ownsDataSource: boolean;
  private readonly table: string;
  private readonly fenceTable: string;
  private readonly ensureTable: boolean;
  private readonly fastPaths: boolean;
  /** The held locks, their connections, leases and slots (`maxHeldConnections`), and the waits in progress. */
  private readonly locks: PinnedLocks<PinnedLock>;
  private ready: Promise<{ dialect: SqlDialect; sql: PessimisticStatements; padding: string | undefined }> | undefined;
  /** Keys whose lock row we have seen: their acquisitions skip the existence check. */
  private readonly knownRows = new Set<string>();
  /** MySQL/MariaDB with `holders: true`: every hold takes and lets go of its marker (see `row-holder-marker.ts`). */
  private readonly marksHolders: boolean;

  /**
   * PostgreSQL (see `rowLockHolderStatements`), and MySQL/MariaDB with `holders: true` (see
   * `markedRowHolderStatements`). Otherwise refused: InnoDB tells which transaction locks a row only through
   * `information_schema` tables that need the PROCESS privilege and date a transaction to the second, too
   * coarse to tell a holder from the next transaction of its connection.
   */
  readonly inspect?: (key: string) => Promise<LockInspection>;
  readonly breakLock?: (key: string, signal?: AbortSignal) => Promise<LockInspection['holders']>;

  constructor(options: PessimisticLockStrategyOptions) {
    const raw: unknown = options;
    assertKnownKeys(raw, PESSIMISTIC_OPTION_KEYS, 'PessimisticLockStrategy options');
    this.name = strategyName(options.name, 'pessimistic');
    this.table = options.table ?? LOCK_TABLES.rows;
    if (options.holders !== undefined && typeof options.holders !== 'boolean') {
      throw new InvalidLockOptionsError('holders', `expected true or false, got ${describe(options.holders)}.`);
    }
    if (!SQL_IDENTIFIER.test(this.table)) throw new InvalidLockOptionsError('table', `expected a plain SQL identifier, got ${describe(this.table)}.`);
    this.ensureTable = options.ensureTable ?? true;
    this.fastPaths = assertFastPaths(options.fastPaths);
    const resolved = resolveDataSource(options.dataSource, options.connection, this.name);
    this.dataSource = resolved.dataSource;
    this.ownsDataSource = resolved.owned;
    const poolSize = poolSizeOf(this.dataSource.options);
    this.locks = new PinnedLocks(this.name, 'pessimistic', maxHeldConnectionsFor(options.maxHeldConnections, poolSize), (row, outcome) => this.endTransaction(row, outcome), poolSize, this.dataSource);
    if (dialectOf(this.dataSource, this.name).name === 'sqlite') {
      throw new InvalidLockOptionsError('dataSource', 'the pessimistic strategy needs MySQL, MariaDB or PostgreSQL (row locks held by a transaction); use RowLockStrategy on SQLite.');
    }
    const postgres = dialectOf(this.dataSource, this.name).name === 'postgres';
    this.fenceTable = fenceTableOf(this.table, !postgres);
    this.marksHolders = !postgres && options.holders === true;
    if (postgres || this.marksHolders) {
      const tables = { rows: this.table, fences: this.fenceTable };
      ({ inspect: this.inspect, breakLock: this.breakLock } = rowLockOperatorCalls(this.dataSource, this.name, this.fastPaths, postgres, tables, async () => (await this.prepare()).dialect));
    }
  }

  validateKey(key: string): void {
    if (key.length > MAX_SQL_KEY_LENGTH) {
      throw new InvalidLockKeyError(key, `the ${this.name} strategy stores keys of at most ${MAX_SQL_KEY_LENGTH} characters (got ${key.length}); hash long identifiers`);
    }
  }

  tryAcquire(request: LockRequest): Promise<LeaseGrant | null> {
    return this.lockRow(request, undefined).catch((error: unknown) => {
      throw this.callError(error, request.key);
    });
  }

  acquire(request: LockRequest, budget: WaitBudget): Promise<LeaseGrant | null> {
    return this.lockRow(request, budget).catch((error: unknown) => {
      throw this.callError(error, request.key);
    });
  }

  /** A refused grant becomes `LockPermissionDeniedError` naming the GRANTs to run. */
  private callError(error: unknown, key: string): unknown {
    return sqlCallError(error, { strategy: this.name, operation: 'acquire', key, tables: [this.table, this.fenceTable] });
  }

  extend(lease: LeaseGrant, ttlMs: number): Promise<LeaseGrant | null> {
    // The lock lives as long as the connection and its transaction: the check proves both are still there.
    return this.locks.extend(lease, ttlMs);
  }

  release(lease: LeaseGrant, outcome: ReleaseOutcome = 'completed'): Promise<boolean | 'session-ended'> {
    return this.locks.finish(lease.owner, outcome);
  }

  onLeaseLost(lease: LeaseGrant, listener: LeaseLostListener): () => void {
    return this.locks.onLeaseLost(lease, listener);
  }

  async ping(): Promise<void> {
    await ensureInitialized(this.dataSource);
    await this.dataSource.query('SELECT 1');
  }

  /**
   * Initialises the data source and prepares the statements and tables the first acquisition would, and
   * opens the two connections an acquisition uses at once (the lock's own, and the fencing token's in
   * autocommit), which the pool would otherwise open during it.
   */
  async warmUp(): Promise<void> {
    await this.prepare();
    const runner = this.dataSource.createQueryRunner();
    try {
      await runner.connect();
      await Promise.all([runner.query('SELECT 1'), this.dataSource.query('SELECT 1')]);
    } finally {
      await runner.release();
    }
  }

  async close(giveUp?: AbortSignal): Promise<void> {
    // Waits on the server end now (their acquisitions resolve as timed out), not at their deadlines.
    await this.locks.close(giveUp);
    if (this.ownsDataSource) await destroyOwnDataSource(this.dataSource, giveUp);
  }

  private lockRow(request: LockRequest, budget: WaitBudget | undefined): Promise<PessimisticLeaseGrant | null> {
    return this.locks.inSlot(request, budget, (remaining) => this.lockRowInSlot(request, remaining));
  }

  private async lockRowInSlot(request: LockRequest, budget: WaitBudget | undefined): Promise<PessimisticLeaseGrant | null> {
    const { dialect, sql, padding } = await this.prepare();
    assertKeyDistinct(request.key, this.table, padding);
    const deadline = Date.now() + (budget?.timeoutMs ?? 0);
    try {
      return await this.lockExistingRow(dialect, sql, request, budget, !this.knownRows.has(request.key));
    } catch (error) {
      if (!(error instanceof MissingLockRow)) throw error;
      // A row we had seen was deleted behind our back (e.g. by a clean-up job): make it again, once,
      // and wait only for what is left of the caller's budget.
      this.knownRows.delete(request.key);
      const rest = budget && budgetWithin(budget, Math.max(1, deadline - Date.now()));
      return await this.lockExistingRow(dialect, sql, request, rest, true);
    }
  }

  /**
   * The row exists before anyone locks it, so that FOR UPDATE always finds one index record to lock
   * (locking a missing key would take a gap lock instead). A plain read first: INSERT IGNORE on an
   * existing row would queue behind the holder's lock. Keys whose row we have seen skip this (one round
   * trip less per acquisition); a row deleted since is noticed by FOR UPDATE finding nothing. Runs on the
   * lock's own connection, in autocommit before its transaction, inside the caller's bound: two callers
   * that both found no row race to insert it, and the loser's insert waits for the winner's row lock, as
   * long as the row lock's wait (`wait.seconds`; none for tryAcquire). A caller that gave up during the
   * read sends no insert (`wait.stopped`): nothing is left to cancel it.
   */
  private async ensureRow(runner: QueryRunner, sql: PessimisticStatements, key: string, wait: { seconds: number; ms: () => number; stopped: () => boolean } | undefined): Promise<void> {
    const exists = (await queryOnRunner(runner, sql.rowExists, [key], this.fastPaths)).records;
    if (exists.length === 0) {
      if (wait?.stopped()) return;
      await queryOnRunner(runner, wait ? sql.insertRow(wait.seconds, wait.ms()) : sql.insertRowNoWait, [key], this.fastPaths);
    }
    // Bounded memory: forgetting every key costs one extra read per key, never correctness.
    if (this.knownRows.size >= KNOWN_ROWS_LIMIT) this.knownRows.clear();
    this.knownRows.add(key);
  }

  private async lockExistingRow(
    dialect: SqlDialect,
    sql: PessimisticStatements,
    request: LockRequest,
    whole: WaitBudget | undefined,
    ensureRow: boolean,
  ): Promise<PessimisticLeaseGrant | null> {
    const until = whole ? Date.now() + whole.timeoutMs : 0;
    const runner = this.dataSource.createQueryRunner();
    // Within the wait: a pool whose every connection is in use fails naming the pool, not the lock's holder.
    if (!(await this.locks.connect(runner, this.dataSource, request.key, whole, poolWaitDeadline(whole)))) return null;
    // The server-side wait gets what is left once the connection came. Given up while it was being taken
    // (the abort listener below is not set yet): nothing sent.
    const left = until - Date.now();
    if (whole && (budgetAborted(whole) || left <= 0)) {
      await runner.release();
      return null;
    }
    const budget = whole && budgetWithin(whole, left);
    const connectionId = connectionIdOf(runner);
    // One bound over every statement that can wait on the server (the insert of a new row, the row lock):
    // on abort, on close, and on MySQL 8 at the deadline (its bound counts whole seconds), the connection's
    // session is ended from another connection, which takes the wait and anything it was granted along.
    // PostgreSQL's lock_timeout and MariaDB's max_statement_time end it at the deadline by themselves.
    // Stopped before a statement that waits was sent: not sent at all.
    const { stopped, disarm } = this.locks.boundWait(runner, budget, sql.exactBound);
    const waitSeconds = budget ? Math.max(1, Math.ceil(budget.timeoutMs / 1000)) : undefined;
    const endsAt = Date.now() + (budget?.timeoutMs ?? 0);
    /** What is left of the wait for a statement sent now (at least 1 ms). */
    const leftMs = (): number => Math.max(1, endsAt - Date.now());
    /** Resolves null once the connection is given back clean, or its session ended (`killed`). */
    const giveUp = async (killed: boolean): Promise<null> => {
      if (killed) await discardConnection(runner);
      else await this.rollbackOrEnd(runner);
      return null;
    };
    try {
      if (ensureRow && !stopped()) await this.ensureRow(runner, sql, request.key, waitSeconds === undefined ? undefined : { seconds: waitSeconds, ms: leftMs, stopped });
      await beginLockTransaction(runner, this.fastPaths);
      // The server answers: from here the wait for the row lock is bounded by the caller's budget.
      budget?.serverAnswered?.();
      if (stopped()) return await giveUp(await disarm());
      // On the runner's own connection, inside the transaction TypeORM started (see mysqlPoolOf).
      const waitMs = waitSeconds === undefined ? undefined : leftMs();
      const rows = (await queryOnRunner(runner, sql.lockRow(waitSeconds, waitMs), sql.lockRowParameters(request.key, waitMs), this.fastPaths)).records;
      // The lease is this process's own timer (the server frees the row when the connection dies): it
      // counts from the moment the row lock was granted, not from before the wait for it.
      const lockedAt = Date.now();
      const killed = await disarm();
      // Cut as the grant came back: the caller is gone (a kill went out: the row went with the session).
      if (killed || stopped()) return await giveUp(killed);
      if (rows.length !== 1) throw new MissingLockRow(request.key);
      // We hold the row lock, so nobody else runs this for the key: the token grows by one per holder,
      // in autocommit, so that rolling the section back never hands the same token out twice.
      const token = dialect.tokenOf(await queryOnDataSource(this.dataSource, sql.nextToken, [request.key, request.owner, connectionId ?? null], this.fastPaths));
      // After the token's row is committed: a marked connection's fence row is always its own grant's.
      if (this.marksHolders) await markHold(runner, rowHolderMarker(this.table, request.key), this.fastPaths);
      const expiresAt = this.locks.hold(request.owner, pinnedLock(request.key, runner), lockedAt, request.ttlMs);
      return { key: request.key, owner: request.owner, mode: request.mode, fencingToken: token, expiresAt, manager: runner.manager };
    } catch (error) {
      const killed = await disarm();
      await giveUp(killed);
      // The wait ended because it was cut (its session killed), or by its own bound.
      if (killed || dialect.isLockWaitTimeout(error)) return null;
      throw error;
    }
  }

  /**
   * Gives a connection that holds no lock we keep back to the pool, its transaction rolled back (the
   * server's answer to the ROLLBACK says the row lock is free); where the ROLLBACK fails, ends its session.
   * `markedKey`: the key of a hold that took its marker, let go of first (a marker that fails to go ends
   * the session, which takes it along: a pooled connection never keeps one). Resolves true when the
   * connection turned out ended under the lock (the unmark or the ROLLBACK failed with it).
   */
  private async rollbackOrEnd(runner: QueryRunner, markedKey?: string): Promise<boolean> {
    const unmarkFailed = markedKey !== undefined && this.marksHolders ? await unmarkHold(runner, rowHolderMarker(this.table, markedKey), this.fastPaths) : undefined;
    if (unmarkFailed !== undefined) {
      const ended = endedUnder(runner, unmarkFailed);
      await this.locks.endSession(runner);
      return ended;
    }
    try {
      if (runner.isTransactionActive && !isConnectionClosed(runner)) await runner.rollbackTransaction();
    } catch (error) {
      const ended = endedUnder(runner, error);
      await this.locks.endSession(runner);
      return ended;
    }
    await runner.release().catch(() => undefined);
    return false;
  }

  /**
   * Ends the lock's transaction: COMMIT for a completed section, ROLLBACK for one that failed, and for a
   * lock lost while its section may still run, the connection closed. Resolves 'session-ended' when the
   * connection turned out gone (the lock, and the section's writes, went with it), as when a statement of
   * the section failed as the session was ended, before the client saw it close. A COMMIT that fails rejects with
   * `LockCommitFailedError`, saying whether the writes were rolled back or whether that is unknown (the
   * connection dropped while the COMMIT was on its way).
   */
  private async endTransaction(row: PinnedLock, outcome: ReleaseOutcome): Promise<boolean | 'session-ended'> {
    if (outcome !== 'completed' || row.connectionLost || isConnectionClosed(row.runner)) {
      if (row.connectionLost || isConnectionClosed(row.runner)) {
        await rollbackAndRelease(row.runner);
        return 'session-ended';
      }
      // Lost while the section may still run (lease out, close()): a ROLLBACK would queue behind the statement
      // it is running, and its next statements would go out after it, in autocommit, saved outside the lock.
      // Its session is ended instead (its next statements fail), and this resolves once the server says it
      // is gone, with the row lock: close() then means the key is free for the next instance.
      if (outcome === 'lost') {
        await this.locks.endSession(row.runner);
        return true;
      }
      return (await this.rollbackOrEnd(row.runner, row.key)) ? 'session-ended' : true;
    }
    // The mark goes before the row lock: a marked connection always holds the row. Failed: nothing is
    // committed. The connection gone, the lock went with it; otherwise its session is ended (a pooled
    // connection never keeps a mark), which rolls the section's writes back.
    if (this.marksHolders) {
      const failed = await unmarkHold(row.runner, rowHolderMarker(this.table, row.key), this.fastPaths);
      if (failed !== undefined) {
        if (endedUnder(row.runner, failed)) {
          await rollbackAndRelease(row.runner);
          return 'session-ended';
        }
        await this.locks.endSession(row.runner);
        throw new LockCommitFailedError(row.key, this.name, false, { cause: failed });
      }
    }
    try {
      await commitLockTransaction(row.runner, this.fastPaths);
    } catch (error) {
      await this.rollbackOrEnd(row.runner);
      // Not sent at all (the connection had closed): nothing was committed, the lock went with its session.
      if (isNotSent(error)) return 'session-ended';
      throw new LockCommitFailedError(row.key, this.name, isConnectionError(error) ? 'unknown' : false, { cause: error });
    }
    await row.runner.release();
    return true;
  }

  private prepare(): Promise<{ dialect: SqlDialect; sql: PessimisticStatements; padding: string | undefined }> {
    this.ready ??= (async () => {
      await ensureInitialized(this.dataSource);
      const dialect = await withServerFeatures(this.dataSource, dialectOf(this.dataSource, this.name));
      if (this.ensureTable) {
        await createMissingTables(this.dataSource, dialect, [
          { table: this.table, statements: [rowTableDdl(dialect, this.table)] },
          { table: this.fenceTable, statements: [fenceTableDdl(dialect, this.fenceTable)] },
        ]);
      }
      const padding = (await paddingMigration(this.dataSource, dialect, this.table)) ?? (await paddingMigration(this.dataSource, dialect, this.fenceTable));
      return { dialect, sql: pessimisticStatements(dialect, this.table, this.fenceTable), padding };
    })().catch((error: unknown) => {
      this.ready = undefined;
      throw error;
    });
    return this.ready;
  }
}

