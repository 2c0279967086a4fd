import { LOCK_QUEUE_TABLE, noHeadPastWindow, noOlderPlace } from './lock-queue.sql';
import type { SqlDialect } from './sql-dialect';

/** The statements of the row (lock table) strategy; the benchmark's floor issues the same ones. */
export interface RowLockStatements {
  /** A key never seen: its row, with the first token; no row changed when the key has one. Parameters: key, owner, ttlMs. */
  readonly insert: string;
  /** Take over a free or expired row, or re-enter our own. Parameters: owner, owner, owner, ttlMs, owner, key, owner. */
  readonly takeOver: string;
  /**
   * `takeOver` in turn: a free or expired row only when no live place of the key's queue of waiters is older
   * than `ticket` (see `noOlderPlace`); our own row is re-entered whatever waits. Parameters: owner, owner,
   * owner, ttlMs, owner, key, owner, key, ticket.
   */
  readonly takeOverInTurn: string;
  /**
   * `takeOver` for a contender without a place: a free or expired row while no head of the key's queue has
   * been head for `windowMs` or longer (see `noHeadPastWindow`). Parameters: owner, owner, owner, ttlMs,
   * owner, key, owner, key, windowMs.
   */
  readonly takeOverBarging: string;
  /** Free our row when this is our last hold. Parameters: key, owner. */
  readonly releaseLast: string;
  /** Drop one of several holds. Parameters: key, owner. */
  readonly releaseOne: string;
  /** Push our live row's expiry. Parameters: ttlMs, key, owner. */
  readonly extend: string;
  /**
   * Hand our live row (last hold) to another owner of this process, with the next token and its lease.
   * Parameters: new owner, ttlMs, key, owner.
   */
  readonly transfer: string;
  /**
   * What the table says of a key, in one statement (one snapshot): its live holder (kind 0: owner, token,
   * expires_at, granted_at) and the first live places of its queue of waiters (kind 1: owner, ticket as
   * token, expires_at, joined_at as granted_at), each row with the server's clock (now_ms). Parameters: key, key.
   */
  readonly inspect: string;
  /** End a live hold whatever its count, as the operator's break does. Parameters: key, owner, token. */
  readonly breakHold: string;
}

/**
 * The statement and parameters that read the live keys beginning with `prefix`, in the table's order, after
 * `cursor` (the last key of the previous page; none: from the first), at most `limit` + 1 (one more tells
 * whether a next page exists). The comparison is the column's, so the caller keeps only the keys that
 * truly begin with the prefix (SQLite's LIKE ignores case).
 *
 * PostgreSQL and SQLite match with LIKE, its wildcards escaped by "!" (LIKE compares characters, whatever
 * the column's collation orders by). MySQL and MariaDB read the range from the prefix up to the prefix
 * followed by the last code point, U+10FFFF: the key column's binary collation orders by code point, and
 * MariaDB 10.11's index range for a LIKE prefix leaves out keys whose next character is above U+FFFF.
 */
export function listKeysQuery(d: SqlDialect, table: string, prefix: string, cursor: string | undefined, limit: number): { sql: string; parameters: unknown[] } {
  const tail = `AND lock_key > ? AND expires_at > ${d.nowMs} ORDER BY lock_key LIMIT ${Math.floor(limit) + 1}`;
  if (d.name === 'mysql') {
    return { sql: d.bind(`SELECT lock_key FROM ${d.quote(table)} WHERE lock_key >= ? AND lock_key < ? ${tail}`), parameters: [prefix, `${prefix}\u{10FFFF}`, cursor ?? ''] };
  }
  return { sql: d.bind(`SELECT lock_key FROM ${d.quote(table)} WHERE lock_key LIKE ? ESCAPE '!' ${tail}`), parameters: [likePrefix(prefix), cursor ?? ''] };
}

/** `prefix` as a LIKE pattern that matches the keys beginning with it ("!" escapes "!", "%" and "_"). */
function likePrefix(prefix: string): string {
  return `${prefix.replace(/[!%_]/g, (c) => `!${c}`)}%`;
}

/** The most waiters `inspect` reads of a key's queue: a longer queue is cut, never read whole. */
export const INSPECT_WAITERS_LIMIT = 1_000;

/**
 * The statements for dialect `d` over the lease table named `table` (unquoted), whose queue of waiters is
 * the table named `queueTable` (see lock-queue.sql.ts).
 */
export function rowLockStatements(d: SqlDialect, table: string, queueTable: string = LOCK_QUEUE_TABLE): RowLockStatements {
  const t = d.quote(table);
  const live = `expires_at > ${d.nowMs}`;
  // acquired_at is the grant's time: a re-entry keeps it.
  const takeOverSet = `UPDATE ${t} SET
      acquired_at = CASE WHEN owner = ? AND ${live} THEN acquired_at ELSE ${d.nowTimestamp} END,
      hold_count = CASE WHEN owner = ? AND ${live} THEN hold_count + 1 ELSE 1 END,
      fencing_token = ${d.tokenExpression(`CASE WHEN owner = ? AND ${live} THEN fencing_token ELSE ${d.nextToken('fencing_token', table)} END`)},
      expires_at = ${d.nowMs} + ?,
      owner = ?`;
  const statements: RowLockStatements = {
    // A key that has its row already: MySQL refuses the INSERT (duplicate key, caught by the strategy);
    // PostgreSQL and SQLite insert nothing and return no row. On PostgreSQL an error would cost more than
    // the statement: pg's pool closes the connection a failed query ran on.
    insert:
      d.name === 'mysql'
        ? `INSERT INTO ${t} (lock_key, owner, hold_count, fencing_token, expires_at) VALUES (?, ?, 1, ${d.tokenExpression(d.firstToken(table))}, ${d.nowMs} + ?)`
        : `${d.insertIfMissing(t, `(lock_key, owner, hold_count, fencing_token, expires_at) VALUES (?, ?, 1, ${d.firstToken(table)}, ${d.nowMs} + ?)`)}${d.tokenReturning}`,
    // Assignments read the old owner and expiry first (MySQL applies SET left to right; PostgreSQL and
    // SQLite read the old row in every assignment). A free or expired
    // row is taken over with the next token; our own live row is re-entered with the same token.
    takeOver: `${takeOverSet}
      WHERE lock_key = ? AND (expires_at <= ${d.nowMs} OR owner = ?)${d.tokenReturning}`,
    takeOverInTurn: `${takeOverSet}
      WHERE lock_key = ? AND (owner = ? OR (expires_at <= ${d.nowMs} AND ${noOlderPlace(d, queueTable)}))${d.tokenReturning}`,
    takeOverBarging: `${takeOverSet}
      WHERE lock_key = ? AND (owner = ? OR (expires_at <= ${d.nowMs} AND ${noHeadPastWindow(d, queueTable)}))${d.tokenReturning}`,
    releaseLast: `UPDATE ${t} SET owner = '', hold_count = 0, expires_at = 0 WHERE lock_key = ? AND owner = ? AND hold_count <= 1`,
    releaseOne: `UPDATE ${t} SET hold_count = hold_count - 1 WHERE lock_key = ? AND owner = ? AND hold_count > 1`,
    extend: `UPDATE ${t} SET expires_at = ${d.nowMs} + ? WHERE lock_key = ? AND owner = ? AND ${live}`,
    transfer: `UPDATE ${t} SET
      fencing_token = ${d.tokenExpression(d.nextToken('fencing_token', table))},
      owner = ?, hold_count = 1, expires_at = ${d.nowMs} + ?, acquired_at = ${d.nowTimestamp}
      WHERE lock_key = ? AND owner = ? AND hold_count <= 1 AND ${live}${d.tokenReturning}`,
    inspect: `SELECT 0 AS kind, owner, fencing_token AS token, expires_at, ${d.epochMs('acquired_at')} AS granted_at, ${d.nowMs} AS now_ms
      FROM ${t} WHERE lock_key = ? AND ${live}
      UNION ALL
      SELECT 1, owner, ticket, expires_at, joined_at, ${d.nowMs} FROM (
        SELECT owner, ticket, expires_at, joined_at FROM ${d.quote(queueTable)}
        WHERE lock_key = ? AND expires_at > ${d.nowMs} ORDER BY ticket LIMIT ${INSPECT_WAITERS_LIMIT}
      ) waiting`,
    breakHold: `UPDATE ${t} SET owner = '', hold_count = 0, expires_at = 0 WHERE lock_key = ? AND owner = ? AND fencing_token = ? AND ${live}`,
  };
  return {
    insert: d.bind(statements.insert),
    takeOver: d.bind(statements.takeOver),
    takeOverInTurn: d.bind(statements.takeOverInTurn),
    takeOverBarging: d.bind(statements.takeOverBarging),
    releaseLast: d.bind(statements.releaseLast),
    releaseOne: d.bind(statements.releaseOne),
    extend: d.bind(statements.extend),
    transfer: d.bind(statements.transfer),
    inspect: d.bind(statements.inspect),
    breakHold: d.bind(statements.breakHold),
  };
}
