import type { LockInspection } from '../../locking/lock-query';
import type { LockDataSource } from './database-client.type';
import { queryOnDataSource, queryOnRunner } from './mysql-direct';
import { lookUntil } from './look-until';
import type { SqlDialect } from './sql-dialect';

// `query` and `breakLock` for a lock held on a pinned connection: the fence row of the key names the last
// grant (owner, token, connection, time, all written in the grant's own statement or right after it), and
// the server says whether that connection still holds the lock. Only that pairing names a holder: a fence
// row alone may be a holder long gone, a held lock alone has no owner id. The server keeps no lease end
// (the lock lives as long as the holder's connection) and, on these two, no queue that names its waiters.

/** Runs one statement of an inspection and resolves its rows. */
export type RunStatement = (sql: string, parameters: unknown[]) => Promise<readonly unknown[]>;

/** The statements that read a key's holder and end its session, for one strategy on one dialect. */
export interface PinnedHolderStatements {
  /** Reads the key's holder, if any, as rows of `HolderRow` (at most one), with `run`. */
  readHolder(run: RunStatement, key: string): Promise<readonly unknown[]>;
  /**
   * Ends the session of the holder the inspection named, with its lock: the statement and its parameters.
   * PostgreSQL ends it only while that owner, with that token, still holds it, in one statement.
   */
  endSession(key: string, holder: { readonly connection: number; readonly owner: string; readonly token: number | undefined }): { sql: string; parameters: unknown[] };
  /** Whether `endSession` ended the holder's session, by its answer. */
  ended(records: readonly unknown[]): boolean;
  /** Whether `endSession` failed only because the session had already ended (then nothing was ended, and nothing failed). */
  alreadyGone(error: unknown): boolean;
}

/** One row of `PinnedHolderStatements.holder`: drivers give numbers as numbers or strings. */
interface HolderRow {
  /** Null for a holder the server shows holding without saying which connection (it cannot be broken). */
  readonly connection: number | string | null;
  /** Null where the holder's connection has no fence row of ours (a holder of another program, or of a version that wrote none). */
  readonly owner: string | null;
  readonly token: number | string | null;
  readonly granted_at: number | string | null;
  readonly now_ms: number | string;
}

/** How many times a MariaDB query reads a holder caught inside its grant statement again (after 0, 1, 2… ms). */
export const GRANT_READS_AGAIN = 5;

/**
 * How long a break waits for the lock to leave an ended holder's session: a killed session exits within
 * milliseconds, one rolling back a large transaction takes as long as its rollback. The operation timeout
 * (5 s by default) bounds the break before this, unless it was raised above it.
 */
const BREAK_CONFIRM_WITHIN_MS = 5_000;

/** MariaDB's and MySQL's error number for a KILL of a connection that is not there. */
const ER_NO_SUCH_THREAD = 1094;

/**
 * Whether a PostgreSQL end statement (`SELECT pg_terminate_backend(…) AS ended …`) signalled a backend: a row
 * per backend signalled, none once that holder had let go.
 */
export function signalledAny(records: readonly unknown[]): boolean {
  return (records as ReadonlyArray<{ ended: unknown }>).some((row) => row.ended === true);
}

/** A holder the inspection found, with the connection whose session holds it, where the server names it. */
export type PinnedHolder = LockInspection['holders'][number] & { readonly connection: number | null };

/**
 * Reads the key's holder with the server's statements (`PinnedHolderStatements.readHolder`), each run by
 * `run`, its grant time moved from the server's clock onto this process's by the middle of the round trip
 * (off by half of it at most).
 */
export async function pinnedHolders(run: RunStatement, sql: PinnedHolderStatements, key: string, serverName: string): Promise<PinnedHolder[]> {
  const sentAt = Date.now();
  const records = await sql.readHolder(run, key);
  const localNow = Math.round((sentAt + Date.now()) / 2);
  return (records as readonly HolderRow[]).map((row) => ({
    connection: row.connection === null ? null : Number(row.connection),
    // Still a holder, though not one of ours: named by what the server knows of it.
    owner: row.owner ?? (row.connection === null ? `${serverName} holder without a mark` : `${serverName} connection ${Number(row.connection)}`),
    mode: 'exclusive',
    ...(row.token !== null ? { fencingToken: Number(row.token) } : {}),
    ...(row.granted_at !== null ? { grantedAt: localNow + (Number(row.granted_at) - Number(row.now_ms)) } : {}),
  }));
}

/** Runs each statement on a connection of the pool (any one: a query's statements need no common one). */
function onPool(dataSource: LockDataSource, fastPaths: boolean): RunStatement {
  return async (statement, parameters) => (await queryOnDataSource(dataSource, statement, parameters, fastPaths)).records;
}

/**
 * Ends the session of each holder the inspection found: the server frees the lock with it, and the holder,
 * whose connection is watched, is told at once that its session ended. Resolves the holders ended once the
 * server no longer shows their connections holding the key, so that it is free: the kill answers when it
 * is sent, and the lock goes on being held, and shown, while the session exits. This looks at the lock
 * itself, not at the list of sessions, which on MySQL/MariaDB shows a user only its own. A holder still
 * shown after BREAK_CONFIRM_WITHIN_MS fails the break, as one that fails on its way does (some holds may
 * have ended).
 */
export async function endHolderSessions(dataSource: LockDataSource, sql: PinnedHolderStatements, key: string, fastPaths: boolean, serverName: string, signal?: AbortSignal): Promise<LockInspection['holders']> {
  // One connection for the whole break, taken first: the signal is checked right before each statement is
  // sent, never before a wait for a free connection of the pool, after which the caller may have been told
  // the break failed (its bound ran out) and no session may be ended any more.
  const runner = dataSource.createQueryRunner();
  try {
    await runner.connect();
    const run: RunStatement = async (statement, parameters) => {
      if (signal?.aborted) throw signal.reason;
      return (await queryOnRunner(runner, statement, parameters, fastPaths)).records;
    };
    const holdersNow = (): Promise<PinnedHolder[]> => pinnedHolders(run, sql, key, serverName);
    const ended: Array<LockInspection['holders'][number]> = [];
    for (const { connection, ...holder } of await holdersNow()) {
      // Held, but the server does not say by which connection: nothing to end.
      if (connection === null) continue;
      const end = sql.endSession(key, { connection, owner: holder.owner, token: holder.fencingToken });
      let records: readonly unknown[];
      try {
        records = await run(end.sql, end.parameters);
      } catch (error) {
        if (!signal?.aborted && sql.alreadyGone(error)) continue;
        throw error;
      }
      if (!sql.ended(records)) continue;
      if (!(await lookUntil(async () => !(await holdersNow()).some((other) => other.connection === connection), BREAK_CONFIRM_WITHIN_MS, signal))) {
        if (signal?.aborted) throw signal.reason;
        const named = holder.owner === `${serverName} connection ${connection}` ? holder.owner : `${serverName} connection ${connection} (${holder.owner})`;
        throw new Error(`${named} was ended, and still held the key after ${BREAK_CONFIRM_WITHIN_MS} ms (a rollback can take that long): it is free once the session has exited`);
      }
      ended.push(holder);
    }
    return ended;
  } finally {
    await runner.release().catch(() => undefined);
  }
}

/**
 * A strategy's `inspect` and `breakLock` over the statements `statements` resolves (once the strategy is
 * ready), each failure passed through `callError` (a refused grant names the GRANT to run).
 */
export function pinnedOperatorCalls(
  dataSource: LockDataSource,
  fastPaths: boolean,
  serverName: string,
  statements: () => Promise<PinnedHolderStatements>,
  callError: (error: unknown, operation: string, key: string) => unknown,
): { inspect: (key: string) => Promise<LockInspection>; breakLock: (key: string, signal?: AbortSignal) => Promise<LockInspection['holders']> } {
  const run = async <T>(key: string, operation: string, call: (sql: PinnedHolderStatements) => Promise<T>): Promise<T> => {
    try {
      return await call(await statements());
    } catch (error) {
      throw callError(error, operation, key);
    }
  };
  return {
    inspect: async (key) => ({ holders: (await run(key, 'query', (sql) => pinnedHolders(onPool(dataSource, fastPaths), sql, key, serverName))).map(({ connection: _, ...holder }) => holder) }),
    breakLock: (key, signal) => run(key, 'breakLock', (sql) => endHolderSessions(dataSource, sql, key, fastPaths, serverName, signal)),
  };
}

/**
 * MySQL/MariaDB: one row always, saying whether a connection still holds a `GET_LOCK` name (`still`), with
 * the fence row that connection wrote for the key where there is one. Parameters: the name, key, connection.
 */
export function fenceRowOfConnection(d: SqlDialect, fences: string): string {
  return `SELECT IS_USED_LOCK(?) AS still, f.locked_by AS owner, f.fencing_token AS token, ${d.epochMs('f.locked_at')} AS granted_at, ${d.nowMs} AS now_ms
    FROM (SELECT 1 AS one) AS o LEFT JOIN ${d.quote(fences)} AS f ON f.lock_key = ? AND f.locked_by_connection = ?`;
}

/**
 * MySQL/MariaDB's `GET_LOCK` (the advisory strategy): `IS_USED_LOCK` names the holding connection, and the
 * fence row, written by the grant's own statement, names its owner. That statement takes the lock before it
 * writes the row, so for a moment a connection that holds the lock anew still has its previous grant's row.
 * Hence three reads, each its own statement: the holder's connection; whether that connection is running a
 * grant (`information_schema.PROCESSLIST`; a user sees its own connections); then the row, and whether the
 * connection still holds. A connection seen holding, and then not in a grant, has every grant since the
 * first read written: the row read after names a hold that was there during the query (the connection's
 * hold when it was seen out of its grant; `IS_USED_LOCK` cannot tell two grants of one connection apart, so a
 * release and a new grant between the last two reads show the earlier). Otherwise the holder is named by its
 * connection alone.
 *
 * The last two are not one statement: MariaDB reads a row looked up by its primary key while it plans the
 * statement, before it fills PROCESSLIST, so one statement could read the previous grant's row and then find
 * the new grant's statement over. And a connection PROCESSLIST shows as `Busy` counts as in a grant: MariaDB
 * shows it so, with no statement text, when that connection was changing its state as the list was filled.
 */
export function getLockHolderStatements(d: SqlDialect, fences: string, lockNameOf: (key: string) => string): PinnedHolderStatements {
  // 'Busy': MariaDB could not read what that connection runs (it was changing its state), so it may be its grant.
  // LOCATE, not LIKE: no escape character, which NO_BACKSLASH_ESCAPES would change.
  const inGrant = `SELECT (COMMAND = 'Busy' OR COALESCE(LOCATE('GET_LOCK(', INFO) > 0, 0)) AS in_grant, IS_USED_LOCK(?) AS still FROM information_schema.PROCESSLIST WHERE ID = ?`;
  const holderRow = fenceRowOfConnection(d, fences);
  const readOnce = async (run: RunStatement, key: string): Promise<{ rows: readonly unknown[]; inGrant: boolean }> => {
    const lockName = lockNameOf(key);
    const [first] = (await run('SELECT IS_USED_LOCK(?) AS connection', [lockName])) as ReadonlyArray<{ connection: number | string | null }>;
    if (first?.connection === null || first?.connection === undefined) return { rows: [], inGrant: false };
    const connection = Number(first.connection);
    const byConnection = [{ connection, owner: null, token: null, granted_at: null, now_ms: 0 }];
    // Let go meanwhile (a break must not end what that connection does next): nobody held it throughout.
    const heldThroughout = (still: number | string | null | undefined): boolean => still !== null && still !== undefined && Number(still) === connection;
    const [listed] = (await run(inGrant, [lockName, connection])) as ReadonlyArray<{ in_grant: number | string; still: number | string | null }>;
    // Not our user's connection (PROCESSLIST shows only those): named by its connection alone.
    if (listed === undefined) return { rows: byConnection, inGrant: false };
    if (!heldThroughout(listed.still)) return { rows: [], inGrant: false };
    if (Number(listed.in_grant) === 1) return { rows: byConnection, inGrant: true };
    const [row] = (await run(holderRow, [lockName, key, connection])) as ReadonlyArray<{ still: number | string | null }>;
    if (row === undefined || !heldThroughout(row.still)) return { rows: [], inGrant: false };
    return { rows: [{ ...row, connection }], inGrant: false };
  };
  return {
    async readHolder(run, key) {
      // A connection caught inside its grant statement is read again: the statement ends as its row commits.
      let read = await readOnce(run, key);
      for (let again = 0; read.inGrant && again < GRANT_READS_AGAIN; again += 1) {
        await new Promise((resolve) => setTimeout(resolve, again));
        read = await readOnce(run, key);
      }
      return read.rows;
    },
    ...killHolderSession,
  };
}

/**
 * MySQL/MariaDB end a holder's session with KILL, which takes no condition: if the holder let go in the round
 * trip between the read and the KILL, what its connection does next is ended instead (docs/operations.md
 * says so). A user may KILL its own connections without a privilege.
 */
export const killHolderSession: Pick<PinnedHolderStatements, 'endSession' | 'ended' | 'alreadyGone'> = {
  endSession: (_key, holder) => ({ sql: `KILL CONNECTION ${Math.trunc(holder.connection)}`, parameters: [] }),
  // KILL answers nothing, or fails; a connection that ended meanwhile is an unknown thread.
  ended: () => true,
  alreadyGone: (error) => {
    const e = error as { errno?: unknown; driverError?: { errno?: unknown } } | null;
    return (e?.driverError?.errno ?? e?.errno) === ER_NO_SUCH_THREAD;
  },
};

/**
 * PostgreSQL's row lock (the pessimistic strategy): the locked row's `xmax` is the transaction that locked
 * it, and the fence row names the connection (backend pid) and owner of the last grant. That connection's
 * current transaction must be the row's locker (a later transaction of the same connection has another id),
 * and the fence row must have been written after that transaction took its id (the row's `xmin` is younger
 * than the locker's): the grant writes the row after it holds, in autocommit on another connection, so
 * until then the row is its connection's previous grant's. Reads `pg_stat_activity`, whose transaction ids
 * a role sees for its own sessions.
 */
export function rowLockHolderStatements(d: SqlDialect, rows: string, fences: string): PinnedHolderStatements {
  // age(): how many transaction ids ago; the smaller, the later it was assigned (wrap-around safe).
  const holderOf = `FROM ${d.quote(rows)} AS r JOIN ${d.quote(fences)} AS f ON f.lock_key = r.lock_key
      JOIN pg_stat_activity AS a ON a.pid = f.locked_by_connection AND a.backend_xid = r.xmax
      WHERE r.lock_key = $1 AND age(f.xmin) < age(r.xmax)`;
  const holder = `SELECT a.pid AS connection, f.locked_by AS owner, f.fencing_token AS token, ${d.epochMs('f.locked_at')} AS granted_at, ${d.nowMs} AS now_ms ${holderOf}`;
  return {
    readHolder: (run, key) => run(holder, [key]),
    // Ends it only while it is still the holder the inspection found, checked in the same statement.
    endSession: (key, holder) => ({
      sql: `SELECT pg_terminate_backend(a.pid) AS ended ${holderOf} AND f.locked_by = $2 AND f.fencing_token = $3`,
      parameters: [key, holder.owner, holder.token ?? null],
    }),
    ended: signalledAny,
    alreadyGone: () => false,
  };
}
