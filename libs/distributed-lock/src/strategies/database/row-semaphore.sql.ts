import { lockKeyCollation, lockKeyColumn } from './lock-table.sql';
import type { SqlDialect } from './sql-dialect';

/** Default tables of the lock table's semaphores. */
export const SEMAPHORE_TABLES = Object.freeze({
  /** One row per semaphore: its size and its last fencing token. Never deleted (the token keeps growing). */
  semaphores: 'distributed_lock_semaphores',
  /** One row per permit held: its owner, weight, fencing token and lease end (on the server's clock). */
  permits: 'distributed_lock_permits',
});

/**
 * DDL of the two semaphore tables. Run them in a migration, or let the strategy run them (`ensureTable`).
 * The permits table's primary key starts with the semaphore's key, so summing a semaphore's live weights
 * reads its rows only.
 */
export function semaphoreTablesDdl(d: SqlDialect, semaphores: string = SEMAPHORE_TABLES.semaphores, permits: string = SEMAPHORE_TABLES.permits): string[] {
  if (d.name === 'mysql' || d.name === 'postgres') {
    const tail = d.name === 'mysql' ? ` ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=${lockKeyCollation(d)}` : '';
    return [
      `CREATE TABLE IF NOT EXISTS ${d.quote(semaphores)} (
  semaphore_key ${lockKeyColumn(d)} PRIMARY KEY,
  permits INT NOT NULL,
  fencing_token BIGINT NOT NULL
)${tail}`,
      `CREATE TABLE IF NOT EXISTS ${d.quote(permits)} (
  semaphore_key ${lockKeyColumn(d)},
  owner VARCHAR(255) NOT NULL,
  weight INT NOT NULL,
  fencing_token BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  PRIMARY KEY (semaphore_key, owner)
)${tail}`,
    ];
  }
  return [
    `CREATE TABLE IF NOT EXISTS ${d.quote(semaphores)} (semaphore_key TEXT NOT NULL PRIMARY KEY, permits INTEGER NOT NULL, fencing_token INTEGER NOT NULL)`,
    `CREATE TABLE IF NOT EXISTS ${d.quote(permits)} (
  semaphore_key TEXT NOT NULL,
  owner TEXT NOT NULL,
  weight INTEGER NOT NULL,
  fencing_token INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (semaphore_key, owner)
)`,
  ];
}

/** The statements of the lock table's semaphores; parameters (`?`, or `$n` on PostgreSQL) in the order each names. */
export interface RowSemaphoreStatements {
  /** The semaphore's row, if missing, with the first token. Parameters: key, permits. */
  readonly ensure: string;
  /** The semaphore's size and last token, its row locked until the transaction ends (MySQL/MariaDB, PostgreSQL). Parameters: key. */
  readonly lockSemaphore: string;
  /** The weight of the live permits, and how many have expired. Parameters: key. */
  readonly usage: string;
  /** Records the size and takes the next token (returned as the dialect returns tokens). Parameters: permits, key. */
  readonly nextToken: string;
  /** Deletes the expired permits. Parameters: key. */
  readonly dropExpired: string;
  /** Records a permit. Parameters: key, owner, weight, token, ttlMs. */
  readonly insert: string;
  /** Pushes a live permit's end. Parameters: ttlMs, key, owner. */
  readonly extend: string;
  /** Deletes a live permit. Parameters: key, owner. */
  readonly releaseLive: string;
  /** Deletes a permit whatever its state (after `releaseLive` found none live). Parameters: key, owner. */
  readonly forget: string;
  /**
   * The live permits of a semaphore (the first 1,000 by token), each row with the semaphore's recorded size
   * and the server's clock (now_ms); no row when none is live. Parameters: key.
   */
  readonly inspect: string;
}

/** The statements for dialect `d` over the two semaphore tables (unquoted names), bound for its driver. */
export function rowSemaphoreStatements(d: SqlDialect, semaphores: string, permits: string): RowSemaphoreStatements {
  const s = d.quote(semaphores);
  const p = d.quote(permits);
  const live = `expires_at > ${d.nowMs}`;
  // SQLite has one writer (BEGIN IMMEDIATE), so the row needs no lock of its own there.
  const forUpdate = d.name === 'sqlite' ? '' : ' FOR UPDATE';
  const larger = d.name === 'sqlite' ? 'max' : 'GREATEST';
  const statements: RowSemaphoreStatements = {
    ensure: d.insertIfMissing(s, '(semaphore_key, permits, fencing_token) VALUES (?, ?, 0)'),
    lockSemaphore: `SELECT permits, fencing_token FROM ${s} WHERE semaphore_key = ?${forUpdate}`,
    usage: `SELECT COALESCE(SUM(CASE WHEN ${live} THEN weight ELSE 0 END), 0) AS used, COALESCE(SUM(CASE WHEN ${live} THEN 0 ELSE 1 END), 0) AS expired FROM ${p} WHERE semaphore_key = ?`,
    nextToken: `UPDATE ${s} SET permits = ?, fencing_token = ${d.tokenExpression(`${larger}(fencing_token + 1, ${d.nowUs})`)} WHERE semaphore_key = ?${d.tokenReturning}`,
    dropExpired: `DELETE FROM ${p} WHERE semaphore_key = ? AND expires_at <= ${d.nowMs}`,
    insert: `INSERT INTO ${p} (semaphore_key, owner, weight, fencing_token, expires_at) VALUES (?, ?, ?, ?, ${d.nowMs} + ?)`,
    extend: `UPDATE ${p} SET expires_at = ${d.nowMs} + ? WHERE semaphore_key = ? AND owner = ? AND ${live}`,
    releaseLive: `DELETE FROM ${p} WHERE semaphore_key = ? AND owner = ? AND ${live}`,
    forget: `DELETE FROM ${p} WHERE semaphore_key = ? AND owner = ?`,
    inspect: `SELECT s.permits, h.owner, h.weight, h.fencing_token, h.expires_at, ${d.nowMs} AS now_ms
      FROM ${p} h JOIN ${s} s ON s.semaphore_key = h.semaphore_key
      WHERE h.semaphore_key = ? AND h.${live} ORDER BY h.fencing_token LIMIT 1000`,
  };
  return Object.fromEntries(Object.entries(statements).map(([name, sql]) => [name, d.bind(sql)])) as Record<keyof RowSemaphoreStatements, string>;
}
