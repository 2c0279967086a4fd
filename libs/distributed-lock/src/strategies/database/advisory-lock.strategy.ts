import type { QueryRunner } from 'typeorm';
import { InvalidLockKeyError } from '../../errors/invalid-lock-key.error';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { LockCommitFailedError } from '../../errors/lock-commit-failed.error';
import type { LeaseGrant, LockRequest, WaitBudget } from '../../locking/lock-lease';
import type { LockInspection } from '../../locking/lock-query';
import { assertKnownKeys, describe } from '../../locking/lock-options';
import type { LeaseLostListener, LockStrategy, LockStrategyCapabilities, ReleaseOutcome } from '../../locking/lock-strategy.interface';
import { budgetAborted } from '../../locking/wait-for-wake';
import { assertFastPaths } from '../fast-paths-option';
import { strategyName } from '../strategy-name';
import { holdersOption, refuseHolders, type AdvisoryLeaseGrant, type AdvisoryLockStrategyOptions } from './advisory-lock.options';
import { getLockName, postgresAdvisoryKey } from './advisory-key';
import { advisoryHolderStatements } from './advisory-holder-inspection';
import { ADVISORY_OBJECTS, advisoryDdl, advisoryHoldersDdl, advisoryStatements, holderCheck, type AdvisoryObjects, type AdvisoryStatements } from './advisory-lock.sql';
import { maxHeldConnectionsFor } from './connection-slots';
import { getLockHolderStatements, pinnedOperatorCalls } from './pinned-lock-inspection';
import { PinnedLocks, pinnedLock, type PinnedLock } from './pinned-locks';
import { poolSizeOf } from './pool-size';
import type { LockDataSource } from './database-client.type';
import { destroyOwnDataSource, ensureInitialized, resolveDataSource } from './database-connection';
import { createMissingSequence, createMissingTables } from './ensure-tables';
import { endedUnder, isConnectionError, isNotSent, rollbackAndRelease } from './held-connection';
import { fenceTableDdl, MAX_SQL_KEY_LENGTH, SQL_IDENTIFIER } from './lock-table.sql';
import { queryOnRunner, type DirectResult } from './mysql-direct';
import { beginLockTransaction, commitLockTransaction } from './runner-transaction';
import { dialectOf, withServerFeatures, type SqlDialect } from './sql-dialect';
import { sqlCallError } from './sql-permission';
import { discardConnection, isConnectionClosed } from './typeorm-internals';

/**
 * How long before the caller's deadline the wait on the server ends (at most a tenth of the wait): more
 * than the time the server takes to start the statement, so that the server's answer "not granted" comes
 * before the caller gives up and its holder's release can reach the server.
 */
const SERVER_WAIT_EARLY_END_MS = 5;

/** A held advisory lock: its pinned connection, and the server's name for it, computed once per lock. */
interface AdvisoryLock extends PinnedLock {
  /** PostgreSQL: the advisory key (`postgresAdvisoryKey`); MySQL/MariaDB: the GET_LOCK name (`getLockName`). */
  readonly lockName: string;
}

interface Prepared {
  readonly dialect: SqlDialect;
  readonly sql: AdvisoryStatements;
}

const OPTION_KEYS = ['dataSource', 'connection', 'name', 'scope', 'tokens', 'holders', 'ensureTable', 'maxHeldConnections', 'fastPaths'];

/**
 * The database's own lock queue: PostgreSQL's advisory locks and MySQL/MariaDB's named locks (`GET_LOCK`).
 * A waiter waits inside the server, which wakes it when the holder releases: no polling, and the server's
 * queue order (FIFO on PostgreSQL's lock manager and MariaDB's metadata locks).
 *
 * Each held lock pins a connection of the pool (bounded by `maxHeldConnections`); the server frees the
 * lock when that connection dies, and the holder's signal says so at once. A fencing token comes with
 * the lock in the same statement: from a sequence (PostgreSQL) or a counter row per key (MySQL/MariaDB).
 * How keys map to advisory keys and lock names: see `postgresAdvisoryKey` and `getLockName`.
 */
export class AdvisoryLockStrategy implements LockStrategy {
  readonly name: string;
  readonly capabilities: LockStrategyCapabilities;
  readonly signalsServerAnswer = true;
  private readonly dataSource: LockDataSource;
  private readonly ownsDataSource: boolean;
  private readonly scope: 'session' | 'transaction';
  private readonly tokens: string | undefined;
  /** PostgreSQL, session scope: the holder table each grant writes (undefined: none). */
  private readonly holders: string | undefined;
  private readonly ensureTable: boolean;
  private readonly fastPaths: boolean;
  /** The held locks, their connections, leases and slots (`maxHeldConnections`), and the waits in progress. */
  private readonly locks: PinnedLocks<AdvisoryLock>;
  private ready: Promise<Prepared> | undefined;
  /** See `advisoryHolderStatements` (PostgreSQL) and `getLockHolderStatements` (MySQL/MariaDB). */
  readonly inspect: (key: string) => Promise<LockInspection>;
  readonly breakLock: (key: string, signal?: AbortSignal) => Promise<LockInspection['holders']>;

  constructor(options: AdvisoryLockStrategyOptions) {
    const raw: unknown = options;
    assertKnownKeys(raw, OPTION_KEYS, 'AdvisoryLockStrategy options');
    this.name = strategyName(options.name, 'advisory');
    const scope: unknown = options.scope ?? 'session';
    if (scope !== 'session' && scope !== 'transaction') throw new InvalidLockOptionsError('scope', `expected "session" or "transaction", got ${describe(scope)}.`);
    this.scope = scope;
    if (options.tokens !== undefined && !SQL_IDENTIFIER.test(options.tokens)) throw new InvalidLockOptionsError('tokens', `expected a plain SQL identifier, got ${describe(options.tokens)}.`);
    this.tokens = options.tokens;
    this.ensureTable = options.ensureTable ?? true;
    this.fastPaths = assertFastPaths(options.fastPaths);
    const resolved = resolveDataSource(options.dataSource, options.connection, this.name);
    this.dataSource = resolved.dataSource;
    this.ownsDataSource = resolved.owned;
    const dialect = dialectOf(this.dataSource, this.name);
    if (dialect.name === 'sqlite') {
      throw new InvalidLockOptionsError('dataSource', 'the advisory strategy needs PostgreSQL (advisory locks) or MySQL/MariaDB (GET_LOCK); use RowLockStrategy on SQLite.');
    }
    const postgres = dialect.name === 'postgres';
    this.holders = postgres ? holdersOption(options.holders, scope, this.tokens ?? ADVISORY_OBJECTS.sequence) : refuseHolders(options.holders);
    const poolSize = poolSizeOf(this.dataSource.options);
    // The check of a held lock's connection carries the holder table's mark: see holderMarker.
    const check = this.holders === undefined ? undefined : holderCheck(dialect, this.holders);
    this.locks = new PinnedLocks(this.name, 'advisory', maxHeldConnectionsFor(options.maxHeldConnections, poolSize), (held, outcome) => this.unlock(held, outcome), poolSize, this.dataSource, check);
    this.capabilities = Object.freeze({ fencing: true, fifo: true, sharedLocks: false, crossProcess: true, transactional: scope === 'transaction' });
    if (postgres) {
      const holders = this.holders;
      ({ inspect: this.inspect, breakLock: this.breakLock } = pinnedOperatorCalls(this.dataSource, this.fastPaths, 'PostgreSQL', async () => advisoryHolderStatements((await this.prepare()).dialect, holders, postgresAdvisoryKey), (error, operation, key) =>
        sqlCallError(error, { strategy: this.name, operation, key, tables: holders === undefined ? [] : [{ table: holders, privileges: 'SELECT' }] }),
      ));
    } else {
      const fences = this.tokens ?? ADVISORY_OBJECTS.fences;
      ({ inspect: this.inspect, breakLock: this.breakLock } = pinnedOperatorCalls(this.dataSource, this.fastPaths, 'MySQL', async () => getLockHolderStatements((await this.prepare()).dialect, fences, getLockName), (error, operation, key) =>
        sqlCallError(error, { strategy: this.name, operation, key, tables: [{ table: fences, privileges: 'SELECT' }] }),
      ));
    }
  }

  validateKey(key: string): void {
    if (key.length > MAX_SQL_KEY_LENGTH) {
      throw new InvalidLockKeyError(key, `the ${this.name} strategy takes keys of at most ${MAX_SQL_KEY_LENGTH} characters (got ${key.length}); hash long identifiers`);
    }
  }

  tryAcquire(request: LockRequest): Promise<LeaseGrant | null> {
    return this.locks.inSlot(request, undefined, () => this.lockOnConnection(request, undefined)).catch((error: unknown) => {
      throw this.callError(error, request.key);
    });
  }

  acquire(request: LockRequest, budget: WaitBudget): Promise<LeaseGrant | null> {
    return this.locks.inSlot(request, budget, (remaining) => this.lockOnConnection(request, remaining)).catch((error: unknown) => {
      throw this.callError(error, request.key);
    });
  }

  /**
   * A refused grant becomes `LockPermissionDeniedError` naming the GRANT to run: USAGE on the token sequence
   * (PostgreSQL's `nextval`) and the holder table's grants, or the fence table's grants (MySQL/MariaDB).
   * Advisory locks and GET_LOCK themselves need no grant.
   */
  private callError(error: unknown, key: string): unknown {
    const postgres = dialectOf(this.dataSource, this.name).name === 'postgres';
    const tokens = this.tokens ?? (postgres ? ADVISORY_OBJECTS.sequence : ADVISORY_OBJECTS.fences);
    const tables = postgres ? (this.holders === undefined ? [] : [this.holders]) : [tokens];
    return sqlCallError(error, { strategy: this.name, operation: 'acquire', key, tables, sequences: postgres ? [tokens] : [] });
  }

  extend(lease: LeaseGrant, ttlMs: number): Promise<LeaseGrant | null> {
    // The lock lives as long as its connection: the check proves it is still there.
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

  /** Initialises the data source and prepares the statements and tables the first acquisition would. */
  async warmUp(): Promise<void> {
    await this.prepare();
  }

  async close(giveUp?: AbortSignal): Promise<void> {
    await this.locks.close(giveUp);
    if (this.ownsDataSource) await destroyOwnDataSource(this.dataSource, giveUp);
  }

  private async lockOnConnection(request: LockRequest, budget: WaitBudget | undefined): Promise<AdvisoryLeaseGrant | null> {
    // The wait on the server ends a little before the caller's deadline, counted from now (preparing and
    // connecting spend part of it). A server-side wait that outlived the deadline would be granted when the
    // holder lets go right after the caller gave up, and hold the lock as an orphan (until the lock service
    // releases it) just when the holder's release should free it for the next one.
    const deadline = budget ? Date.now() + budget.timeoutMs - Math.min(SERVER_WAIT_EARLY_END_MS, budget.timeoutMs / 10) : 0;
    const { dialect, sql } = await this.prepare();
    // The server's name for the lock, hashed once: the lock and the unlock send the same.
    const lockName = dialect.name === 'postgres' ? postgresAdvisoryKey(request.key) : getLockName(request.key);
    const runner = this.dataSource.createQueryRunner();
    // Within the wait: a pool whose every connection is in use fails naming the pool, not the lock's holder.
    if (!(await this.locks.connect(runner, this.dataSource, request.key, budget, deadline))) return null;
    const waitMs = deadline - Date.now();
    if (budget && (budgetAborted(budget) || waitMs <= 0)) {
      await runner.release();
      return null;
    }
    // The server bounds the wait by itself, exactly (lock_timeout in ms, GET_LOCK's fractional seconds on
    // MariaDB); an abort and close() end the wait's session from another connection, which takes the wait
    // and anything it was granted along. MySQL 8's GET_LOCK counts whole seconds: its deadline cuts it too.
    const exactBound = dialect.name === 'postgres' || dialect.mariadb;
    const { stopped, disarm } = this.locks.boundWait(runner, budget, exactBound, waitMs);
    /** Resolves null once the connection is given back holding nothing, or its session ended (`killed`). */
    const giveUp = async (killed: boolean): Promise<null> => {
      if (killed) await discardConnection(runner);
      else await rollbackAndRelease(runner);
      return null;
    };
    try {
      // PostgreSQL's transaction-level lock is taken inside the transaction; MySQL's GET_LOCK (and its token
      // row, which a rolled-back section must not undo) before it.
      if (this.scope === 'transaction' && dialect.name === 'postgres') await beginLockTransaction(runner, this.fastPaths);
      budget?.serverAnswered?.();
      if (stopped()) return await giveUp(await disarm());
      // Tried first: a free lock is taken by the plain try (one short statement, prepared once per
      // connection on PostgreSQL), and only a refused one waits. A refused try leaves nothing on the
      // server, and cannot overtake a waiter: the server hands a released lock to its first waiter itself.
      let result = await queryOnRunner(runner, sql.tryLock, this.lockParameters(dialect, request, lockName, undefined), this.fastPaths);
      if (budget && tokenOf(dialect, result) === undefined) {
        if (stopped()) return await giveUp(await disarm());
        result = await queryOnRunner(runner, sql.lock, this.lockParameters(dialect, request, lockName, deadline - Date.now()), this.fastPaths);
      }
      const lockedAt = Date.now();
      const killed = await disarm();
      const token = tokenOf(dialect, result);
      if (killed) return await giveUp(true);
      if (token === undefined) return await giveUp(false);
      // Cut as the grant came back (the caller is gone, the strategy closes): the lock goes back at once.
      if (stopped()) {
        await this.unlockUnused(runner, sql, lockName);
        return null;
      }
      // MySQL's transaction starts after GET_LOCK (and its token row, which a rolled-back section must not
      // undo), before the lock counts as held: if it fails, the acquisition fails and its slot goes back once.
      if (this.scope === 'transaction' && dialect.name !== 'postgres') await beginLockTransaction(runner, this.fastPaths);
      const expiresAt = this.locks.hold(request.owner, { ...pinnedLock(request.key, runner), lockName }, lockedAt, request.ttlMs);
      const grant: AdvisoryLeaseGrant = { key: request.key, owner: request.owner, mode: request.mode, fencingToken: token, expiresAt };
      return this.scope === 'transaction' ? { ...grant, manager: runner.manager } : grant;
    } catch (error) {
      const killed = await disarm();
      // A statement that failed may have failed after its lock was granted (PostgreSQL keeps a session-level
      // advisory lock through the error, also a lock_timeout's: its timer can fire as the lock is granted).
      // The connection goes back to the pool only once the server answered that it holds no lock at all.
      if (killed) await discardConnection(runner);
      else await this.unlockAllOrEnd(runner, sql);
      if (killed || dialect.isLockWaitTimeout(error)) return null;
      throw error;
    }
  }

  /**
   * Gives back a lock granted to an acquisition that was cut meanwhile: the transaction's ROLLBACK (which
   * frees a transaction-level lock), the unlock, each answered by the server; the session is ended where
   * either fails.
   */
  private async unlockUnused(runner: QueryRunner, sql: AdvisoryStatements, lockName: string): Promise<void> {
    try {
      if (runner.isTransactionActive) await runner.rollbackTransaction();
      if (sql.unlock) await queryOnRunner(runner, sql.unlock, [lockName], this.fastPaths);
    } catch {
      await this.locks.endSession(runner);
      return;
    }
    await runner.release().catch(() => undefined);
  }

  /**
   * Gives a connection whose lock statement failed back to the pool holding nothing: the transaction's
   * ROLLBACK, then every advisory lock of the session freed (`pg_advisory_unlock_all()`,
   * `RELEASE_ALL_LOCKS()`: the connection is pinned for this one lock, so nothing else of ours is on it),
   * each answered by the server. Where either fails the session is ended instead.
   */
  private async unlockAllOrEnd(runner: QueryRunner, sql: AdvisoryStatements): Promise<void> {
    try {
      if (isConnectionClosed(runner)) throw new Error('connection closed');
      if (runner.isTransactionActive) await runner.rollbackTransaction();
      await queryOnRunner(runner, sql.unlockAll, [], this.fastPaths);
    } catch {
      await this.locks.endSession(runner);
      return;
    }
    await runner.release().catch(() => undefined);
  }

  /**
   * `lockName`: the server's name for the lock (see `lockOnConnection`). `waitMs`: what is left of the
   * caller's wait when the statement goes (undefined: the try, no wait).
   */
  private lockParameters(dialect: SqlDialect, request: LockRequest, lockName: string, waitMs: number | undefined): unknown[] {
    const wait = waitMs === undefined ? undefined : Math.max(1, Math.ceil(waitMs));
    if (dialect.name === 'postgres') {
      const grant = wait === undefined ? [lockName] : [lockName, `${wait}ms`];
      return this.holders === undefined ? grant : [...grant, request.key, request.owner];
    }
    // GET_LOCK takes fractional seconds on MariaDB; the session's end at the deadline bounds it on MySQL 8.
    return [request.key, request.owner, lockName, wait === undefined ? 0 : wait / 1000];
  }

  /**
   * Ends the section: COMMIT or ROLLBACK of its transaction (transaction scope), then the unlock (session
   * locks, MySQL's GET_LOCK). Resolves 'session-ended' when the connection turned out gone (the lock went
   * with it), as when a statement of the section failed as the session was ended, before the client saw it
   * close. A connection whose unlock failed is closed, never given back to the pool still holding the lock.
   */
  private async unlock(held: AdvisoryLock, outcome: ReleaseOutcome): Promise<boolean | 'session-ended'> {
    if (held.connectionLost || isConnectionClosed(held.runner)) {
      await rollbackAndRelease(held.runner);
      return 'session-ended';
    }
    const { sql } = await this.prepare();
    if (outcome === 'lost') {
      // The section may still run: a ROLLBACK or an unlock would queue behind its statement, and its next
      // statements go out after it, in autocommit. Its session is ended instead, which rolls back and frees
      // the lock; this resolves once the server says it is gone (close() then means the key is free).
      await this.locks.endSession(held.runner);
      return true;
    }
    if (this.scope === 'transaction') {
      try {
        if (outcome === 'completed') await commitLockTransaction(held.runner, this.fastPaths);
        else await held.runner.rollbackTransaction();
      } catch (error) {
        const ended = endedUnder(held.runner, error);
        await this.locks.endSession(held.runner);
        if (outcome !== 'completed') return ended ? 'session-ended' : false;
        // A COMMIT never sent (the connection had closed) committed nothing: the lock went with its session.
        // One sent and then cut off may have committed: its outcome is unknown, and the caller must hear so.
        if (isNotSent(error)) return 'session-ended';
        throw new LockCommitFailedError(held.key, this.name, isConnectionError(error) ? 'unknown' : false, { cause: error });
      }
    }
    if (!sql.unlock) {
      // pg_advisory_xact_lock: the COMMIT or ROLLBACK freed it.
      await held.runner.release();
      return true;
    }
    try {
      const rows = (await queryOnRunner(held.runner, sql.unlock, [held.lockName], this.fastPaths)).records as Array<{ released?: unknown }>;
      const released = rows[0]?.released;
      await held.runner.release();
      return released === true || Number(released) === 1;
    } catch (error) {
      const ended = endedUnder(held.runner, error);
      await this.locks.endSession(held.runner);
      return ended ? 'session-ended' : false;
    }
  }

  private prepare(): Promise<Prepared> {
    this.ready ??= (async () => {
      await ensureInitialized(this.dataSource);
      const dialect = await withServerFeatures(this.dataSource, dialectOf(this.dataSource, this.name));
      const objects: AdvisoryObjects =
        dialect.name === 'postgres' ? { ...ADVISORY_OBJECTS, sequence: this.tokens ?? ADVISORY_OBJECTS.sequence, holders: this.holders } : { ...ADVISORY_OBJECTS, fences: this.tokens ?? ADVISORY_OBJECTS.fences };
      if (this.ensureTable) {
        // Only what is missing: a role without CREATE works once a migration made the sequence or tables.
        const ddl = advisoryDdl(dialect, objects, fenceTableDdl);
        if (dialect.name === 'postgres') {
          await createMissingSequence(this.dataSource, objects.sequence, ddl);
          if (this.holders !== undefined) await createMissingTables(this.dataSource, dialect, [{ table: this.holders, statements: advisoryHoldersDdl(dialect, this.holders) }]);
        } else {
          await createMissingTables(this.dataSource, dialect, [{ table: objects.fences, statements: ddl }]);
        }
      }
      return { dialect, sql: advisoryStatements(dialect, this.scope, objects) };
    })().catch((error: unknown) => {
      this.ready = undefined;
      throw error;
    });
    return this.ready;
  }
}

/** The token of a granted lock, or undefined when it was not granted (PostgreSQL: a null token; MySQL: no row written). */
function tokenOf(dialect: SqlDialect, result: DirectResult): number | undefined {
  if (dialect.name === 'postgres') {
    const token = (result.records[0] as { fencing_token?: string | number | null } | undefined)?.fencing_token;
    return token === null || token === undefined ? undefined : Number(token);
  }
  return (result.affected ?? 0) > 0 ? dialect.tokenOf(result) : undefined;
}
