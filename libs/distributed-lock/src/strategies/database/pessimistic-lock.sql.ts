import type { SqlDialect } from './sql-dialect';

/** The statements of the pessimistic (SELECT … FOR UPDATE) strategy; the benchmark's floor issues the same ones. */
export interface PessimisticStatements {
  /** Whether the key's row exists (read first: INSERT IGNORE on a locked row would queue behind its holder). Parameter: key. */
  readonly rowExists: string;
  /**
   * Make the key's row. Parameter: key. When another caller made it a moment ago and already locked it,
   * the duplicate check waits for that lock: on MySQL/MariaDB at most `waitSeconds` (the row lock's own
   * bound), and the caller cuts it at its deadline (KILL QUERY). On PostgreSQL it waits only for an insert
   * of the same key not yet committed, never for a row lock.
   */
  insertRow(waitSeconds: number, waitMs?: number): string;
  /** The same, refused at once instead of waiting behind a lock on the row (tryAcquire). Parameter: key. */
  readonly insertRowNoWait: string;
  /**
   * The fencing token's next value, in autocommit, returned in the statement's result (see
   * `SqlDialect.tokenOf`). Parameters: key, owner, connection id.
   */
  readonly nextToken: string;
  /**
   * Lock the key's row in the open transaction. `waitSeconds` undefined: refuse at once if it is locked
   * (NOWAIT); otherwise wait: on PostgreSQL as long as `waitMs`, the transaction-local `lock_timeout` set in
   * the same statement before the row is locked (one round trip, not two); on MariaDB `WAIT n` (whole
   * seconds) and, with `waitMs`, `max_statement_time` (exact); on MySQL 8 a per-statement lock wait
   * timeout. Its parameters: `lockRowParameters`.
   */
  lockRow(waitSeconds: number | undefined, waitMs?: number): string;
  /** The parameters of `lockRow` for `key` (with `waitMs` where it waits). */
  lockRowParameters(key: string, waitMs: number | undefined): unknown[];
  /**
   * The server's own bound on a wait ends it at the caller's deadline, to the millisecond (PostgreSQL's
   * lock_timeout, MariaDB's max_statement_time): the strategy need not cut it there (MySQL 8 counts whole
   * seconds, and is cut).
   */
  readonly exactBound: boolean;
}

/** The statements for dialect `d` (MySQL, MariaDB or PostgreSQL) over the row and fence tables. */
export function pessimisticStatements(d: SqlDialect, rowTable: string, fenceTable: string): PessimisticStatements {
  const rows = d.quote(rowTable);
  if (d.name === 'postgres') {
    const fences = d.quote(fenceTable);
    return {
      rowExists: d.bind(`SELECT 1 AS present FROM ${rows} WHERE lock_key = ?`),
      insertRow: () => d.bind(d.insertIfMissing(rows, '(lock_key) VALUES (?)')),
      // ON CONFLICT DO NOTHING never waits for a row lock: only for an insert of the same key not yet committed.
      insertRowNoWait: d.bind(d.insertIfMissing(rows, '(lock_key) VALUES (?)')),
      nextToken: d.bind(`INSERT INTO ${fences} AS f (lock_key, fencing_token, locked_by, locked_by_connection, locked_at)
         VALUES (?, ${d.firstToken(fenceTable)}, ?, ?, clock_timestamp())
         ON CONFLICT (lock_key) DO UPDATE SET fencing_token = ${d.nextToken('f.fencing_token', fenceTable)}, locked_by = EXCLUDED.locked_by,
           locked_by_connection = EXCLUDED.locked_by_connection, locked_at = EXCLUDED.locked_at
         RETURNING fencing_token`),
      // The wait's lock_timeout is set first (the LATERAL row lock reads the row it comes in, and OFFSET 0
      // keeps the planner from merging the two), local to the transaction: the section's own statements
      // run with the session's setting.
      lockRow: (waitSeconds) =>
        waitSeconds === undefined
          ? d.bind(`SELECT lock_key FROM ${rows} WHERE lock_key = ? FOR UPDATE NOWAIT`)
          : d.bind(`SELECT r.lock_key FROM (SELECT set_config('lock_timeout', ?, true) AS wait OFFSET 0) AS w,
         LATERAL (SELECT lock_key FROM ${rows} WHERE lock_key = ? AND w.wait IS NOT NULL FOR UPDATE) AS r`),
      lockRowParameters: (key, waitMs) => (waitMs === undefined ? [key] : [`${Math.max(1, Math.ceil(waitMs))}ms`, key]),
      exactBound: true,
    };
  }
  return {
    rowExists: `SELECT 1 AS present FROM ${rows} WHERE lock_key = ?`,
    insertRow: (waitSeconds, waitMs) => insertWaiting(d, rows, waitSeconds, waitMs),
    insertRowNoWait: insertWaiting(d, rows, 0),
    nextToken: `INSERT INTO ${d.quote(fenceTable)} (lock_key, fencing_token, locked_by, locked_by_connection, locked_at)
         VALUES (?, ${d.tokenExpression(d.firstToken(fenceTable))}, ?, ?, NOW(3))
         ON DUPLICATE KEY UPDATE fencing_token = ${d.tokenExpression(d.nextToken('fencing_token', fenceTable))}, locked_by = VALUES(locked_by),
           locked_by_connection = VALUES(locked_by_connection), locked_at = VALUES(locked_at)`,
    lockRowParameters: (key) => [key],
    lockRow(waitSeconds, waitMs) {
      if (waitSeconds === undefined) return `SELECT lock_key FROM ${rows} WHERE lock_key = ? FOR UPDATE NOWAIT`;
      if (!d.mariadb) return `SELECT /*+ SET_VAR(innodb_lock_wait_timeout=${waitSeconds}) */ lock_key FROM ${rows} WHERE lock_key = ? FOR UPDATE`;
      const lock = `SELECT lock_key FROM ${rows} WHERE lock_key = ? FOR UPDATE WAIT ${waitSeconds}`;
      return waitMs === undefined ? lock : `SET STATEMENT max_statement_time=${statementSeconds(waitMs)} FOR ${lock}`;
    },
    exactBound: d.mariadb,
  };
}

/**
 * MySQL/MariaDB: the row's insert, waiting behind a lock on a row of the same key at most `seconds`.
 * MariaDB takes 0 (do not wait), and `waitMs` bounds the statement exactly (`max_statement_time`); MySQL's
 * least is 1 s.
 */
function insertWaiting(d: SqlDialect, rows: string, seconds: number, waitMs?: number): string {
  const insert = d.insertIfMissing(rows, '(lock_key) VALUES (?)');
  const bound = Math.max(0, Math.ceil(seconds));
  if (!d.mariadb) return insert.replace(/^INSERT /, `INSERT /*+ SET_VAR(innodb_lock_wait_timeout=${Math.max(1, bound)}) */ `);
  return `SET STATEMENT innodb_lock_wait_timeout=${bound}${waitMs === undefined ? '' : `, max_statement_time=${statementSeconds(waitMs)}`} FOR ${insert}`;
}

/** MariaDB's max_statement_time for a wait of `ms`: seconds with three decimals, never 0 (which means no bound). */
function statementSeconds(ms: number): string {
  return (Math.max(1, Math.ceil(ms)) / 1000).toFixed(3);
}
