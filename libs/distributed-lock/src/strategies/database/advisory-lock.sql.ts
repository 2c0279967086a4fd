import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { describe } from '../../locking/lock-options';
import { fenceTableDdl, lockKeyColumn, SQL_IDENTIFIER } from './lock-table.sql';
import type { SqlDialect } from './sql-dialect';

/** Default names of the advisory strategy's objects. */
export const ADVISORY_OBJECTS = Object.freeze({
  /** PostgreSQL: the sequence fencing tokens come from. */
  sequence: 'distributed_lock_advisory_tokens',
  /** MySQL/MariaDB: the last fencing token per key. */
  fences: 'distributed_lock_advisory_fences',
  /** PostgreSQL, session scope, with `holders: true`: the last holder of each key (owner, backend pid, token, time), for `query`. */
  holders: 'distributed_lock_advisory_holders',
});

/** The advisory strategy's objects on the server: `holders` undefined where no holder row is written. */
export interface AdvisoryObjects {
  readonly sequence: string;
  readonly fences: string;
  readonly holders?: string;
}

/**
 * The statements of the advisory strategy. Each takes the lock and its fencing token in one round trip,
 * so that a lock costs what the raw `pg_advisory_lock` / `GET_LOCK` does plus the token's work on the server.
 */
export interface AdvisoryStatements {
  /**
   * Wait for the lock on the server (bounded there by the wait: `lock_timeout` on PostgreSQL, GET_LOCK's
   * timeout on MySQL), then draw the token. PostgreSQL parameters: advisory key, wait as `'<n>ms'`, and
   * with a holder table the key and the owner; its result's row carries `fencing_token`. MySQL parameters: key, owner, name, wait in seconds; the token is
   * the OK packet's insertId, and no row changed means the wait ran out.
   */
  readonly lock: string;
  /**
   * The same without waiting (PostgreSQL: `pg_try_…`, whose token is null when refused, parameters the
   * advisory key and, with a holder table, the key and the owner; MySQL: a 0 s wait).
   */
  readonly tryLock: string;
  /** Frees a session lock (PostgreSQL: the advisory key; MySQL: the name). Its row says `released` true/1 when ours. */
  readonly unlock: string | undefined;
  /** Frees every session-level lock of the connection (after a lock statement that failed, maybe after its grant). No parameter. */
  readonly unlockAll: string;
}

/** The advisory lock functions of a scope on PostgreSQL. */
function pgFunctions(scope: 'session' | 'transaction'): { lock: string; tryLock: string } {
  return scope === 'session' ? { lock: 'pg_advisory_lock', tryLock: 'pg_try_advisory_lock' } : { lock: 'pg_advisory_xact_lock', tryLock: 'pg_try_advisory_xact_lock' };
}

/**
 * The statements for dialect `d`. On PostgreSQL the steps of `lock` run in a fixed order because each
 * level reads the row of the subquery inside it (OFFSET 0 keeps the planner from merging them): keep the
 * session's lock_timeout, set the wait as the transaction-local lock_timeout, wait for the lock, then
 * draw the token and put lock_timeout back (in a transaction, the section's own statements run with the
 * session's setting).
 */
export function advisoryStatements(d: SqlDialect, scope: 'session' | 'transaction', objects: AdvisoryObjects): AdvisoryStatements {
  if (d.name === 'postgres') {
    const fn = pgFunctions(scope);
    const seq = `nextval('${d.quote(objects.sequence)}')`;
    const lock = `SELECT ${seq} AS fencing_token, set_config('lock_timeout', before, true) AS restored
        FROM (SELECT before, ${fn.lock}($1::bigint) AS locked
          FROM (SELECT before, set_config('lock_timeout', $2, true) AS wait
            FROM (SELECT current_setting('lock_timeout') AS before) AS b OFFSET 0) AS w OFFSET 0) AS l`;
    // CASE evaluates its condition first: the token is drawn only for a granted lock.
    const tryLock = `SELECT CASE WHEN ${fn.tryLock}($1::bigint) THEN ${seq} END AS fencing_token`;
    const holders = scope === 'session' ? objects.holders : undefined;
    return {
      lock: holders === undefined ? lock : withHolderRow(d, holders, lock, 3),
      tryLock: holders === undefined ? tryLock : withHolderRow(d, holders, tryLock, 2),
      unlock: scope === 'session' ? 'SELECT pg_advisory_unlock($1::bigint) AS released' : undefined,
      unlockAll: 'SELECT pg_advisory_unlock_all()',
    };
  }
  const fences = d.quote(objects.fences);
  // GET_LOCK in the WHERE clause: the token row is written only once the lock is ours, in the same statement,
  // with the holder's owner id, connection and grant time (what `query` reads: see getLockHolderStatements).
  // SYSDATE, not NOW: the time the row is written, after the wait, not the statement's start.
  const lock = `INSERT INTO ${fences} (lock_key, fencing_token, locked_by, locked_by_connection, locked_at)
    SELECT ?, ${d.tokenExpression(d.firstToken(objects.fences))}, ?, CONNECTION_ID(), SYSDATE(3) FROM DUAL WHERE GET_LOCK(?, ?) = 1
    ON DUPLICATE KEY UPDATE fencing_token = ${d.tokenExpression(d.nextToken('fencing_token', objects.fences))}, locked_by = VALUES(locked_by),
      locked_by_connection = VALUES(locked_by_connection), locked_at = VALUES(locked_at)`;
  return { lock, tryLock: lock, unlock: 'SELECT RELEASE_LOCK(?) AS released', unlockAll: 'SELECT RELEASE_ALL_LOCKS()' };
}

/**
 * PostgreSQL: the comment that opens every statement a strategy writing holder table `holders` sends on a
 * connection that holds (or takes) one of its locks: its grant and its check of the connection. A backend
 * whose last statement (`pg_stat_activity.query`) opens with it holds what that strategy granted, so the
 * table's row for it is its hold's; one whose last statement does not (a strategy with another table or
 * none, your own `pg_advisory_lock` on a pooled connection) may still have a row left from an earlier grant.
 */
export function holderMarker(d: SqlDialect, holders: string): string {
  return `/* distributed-lock holders ${d.quote(holders)} */`;
}

/** PostgreSQL: the check that a held lock's connection is alive, for a strategy writing holder table `holders`. */
export function holderCheck(d: SqlDialect, holders: string): string {
  return `${holderMarker(d, holders)} SELECT 1`;
}

/**
 * PostgreSQL: `grant` with the holder's row written in the same statement, once granted (a data-modifying
 * CTE, which the statement's commit makes visible with the grant): the key, owner (parameters `$first` and
 * `$first + 1`), backend pid, token and the time the row is written. Nothing is written for a refused try,
 * and a wait that runs out fails the statement before its insert. The row is never deleted: `query` pairs
 * it with the pid `pg_locks` names and that backend's last statement (see `advisoryHolderStatements`).
 */
function withHolderRow(d: SqlDialect, holders: string, grant: string, first: number): string {
  return `${holderMarker(d, holders)} WITH g AS (${grant}),
      h AS (INSERT INTO ${d.quote(holders)} AS t (lock_key, pid, owner, fencing_token, locked_at)
        SELECT $${first}, pg_backend_pid(), $${first + 1}, g.fencing_token, clock_timestamp() FROM g WHERE g.fencing_token IS NOT NULL
        ON CONFLICT (lock_key) DO UPDATE SET pid = EXCLUDED.pid, owner = EXCLUDED.owner, fencing_token = EXCLUDED.fencing_token, locked_at = EXCLUDED.locked_at)
    SELECT fencing_token FROM g`;
}

/**
 * PostgreSQL: the holder table. UNLOGGED: a row matters only while the server's own advisory locks do,
 * which a crash or a failover ends too; its writes skip the WAL.
 */
function holdersTableDdl(d: SqlDialect, table: string): string {
  return `CREATE UNLOGGED TABLE IF NOT EXISTS ${d.quote(table)} (
  lock_key ${lockKeyColumn(d)} PRIMARY KEY,
  pid INTEGER NOT NULL,
  owner VARCHAR(255) NOT NULL,
  fencing_token BIGINT NOT NULL,
  locked_at TIMESTAMPTZ(3) NOT NULL
)`;
}

/**
 * DDL of the advisory strategy's holder table (PostgreSQL; MySQL/MariaDB name holders in the fence table,
 * and get none), for a migration that makes it ahead of time, then the strategy's role needs no CREATE.
 * `holders` is the strategy's option of that name (default here `true`: `ADVISORY_OBJECTS.holders`;
 * `false`: none).
 */
export function advisoryHoldersDdl(dialect: SqlDialect, holders: boolean | string = true): string[] {
  const table = holdersTable(holders);
  return table !== undefined && dialect.name === 'postgres' ? [holdersTableDdl(dialect, table)] : [];
}

/**
 * The holder table an option value `holders` names (`true`: `ADVISORY_OBJECTS.holders`), or undefined for
 * `false` and `undefined`; anything else throws `InvalidLockOptionsError`.
 */
export function holdersTable(holders: unknown): string | undefined {
  if (holders === undefined || holders === false) return undefined;
  if (holders === true) return ADVISORY_OBJECTS.holders;
  if (typeof holders === 'string' && SQL_IDENTIFIER.test(holders)) return holders;
  throw new InvalidLockOptionsError('holders', `expected true, false or a plain SQL identifier, got ${describe(holders)}.`);
}

/** DDL of the token source: a sequence on PostgreSQL (starting at the clock in µs), the fence table on MySQL/MariaDB. */
export function advisoryDdl(d: SqlDialect, objects: AdvisoryObjects, fenceTableDdl: (d: SqlDialect, table: string) => string): string[] {
  if (d.name === 'postgres') {
    // A sequence made again (dropped by hand) starts above every token it gave before, as long as the clock moved on.
    return [`CREATE SEQUENCE IF NOT EXISTS ${d.quote(objects.sequence)} AS BIGINT START WITH ${Date.now() * 1000}`];
  }
  return [fenceTableDdl(d, objects.fences)];
}

/**
 * DDL of the advisory strategy's token source, for a migration that makes it ahead of time (then the
 * strategy's role needs no CREATE): on PostgreSQL the sequence, on MySQL/MariaDB the fence table. `tokens`
 * is the strategy's option of that name (default: `ADVISORY_OBJECTS.sequence` or `ADVISORY_OBJECTS.fences`).
 */
export function advisoryTokensDdl(dialect: SqlDialect, tokens?: string): string[] {
  if (tokens !== undefined && !SQL_IDENTIFIER.test(tokens)) throw new InvalidLockOptionsError('tokens', `expected a plain SQL identifier, got ${describe(tokens)}.`);
  return advisoryDdl(dialect, { sequence: tokens ?? ADVISORY_OBJECTS.sequence, fences: tokens ?? ADVISORY_OBJECTS.fences }, fenceTableDdl);
}
