import type { SqlDialect } from './sql-dialect';

/** The statements of the pessimistic (SELECT … FOR UPDATE) strategy; the benchmark's floor issues the same ones. */
export interface PessimisticStatements {
  /** Whether the key's row exists (read first: INSERT IGNORE on a locked row would queue behind its holder). Parameter: key. */
  readonly rowExists: string;
  /**
   * Make the key's row. Parameter: key. When another caller made it a moment ago and already locked it,
   * the duplicate check waits for that lock; the caller bounds the wait (KILL QUERY at its deadline).
   */
  readonly insertRow: string;
  /** The same, refused at once instead of waiting behind a lock on the row (tryAcquire). Parameter: key. */
  readonly insertRowNoWait: string;
  /** The fencing token's next value, in autocommit, returned in the OK packet. Parameters: key, owner, connection id. */
  readonly nextToken: string;
  /**
   * Lock the key's row in the open transaction. `waitSeconds` undefined: refuse at once if it is locked
   * (NOWAIT); otherwise wait that long (MariaDB `WAIT n`, MySQL 8 a per-statement lock wait timeout). Parameter: key.
   */
  lockRow(waitSeconds: number | undefined): string;
}

/** The statements for dialect `d` (MySQL or MariaDB) over the row and fence tables. */
export function pessimisticStatements(d: SqlDialect, rowTable: string, fenceTable: string): PessimisticStatements {
  const rows = d.quote(rowTable);
  return {
    rowExists: `SELECT 1 AS present FROM ${rows} WHERE lock_key = ?`,
    insertRow: d.insertIfMissing(rows, '(lock_key) VALUES (?)'),
    // MariaDB takes 0 (do not wait); MySQL's least is 1 s.
    insertRowNoWait: d.mariadb
      ? `SET STATEMENT innodb_lock_wait_timeout=0 FOR ${d.insertIfMissing(rows, '(lock_key) VALUES (?)')}`
      : d.insertIfMissing(rows, '(lock_key) VALUES (?)').replace(/^INSERT /, 'INSERT /*+ SET_VAR(innodb_lock_wait_timeout=1) */ '),
    nextToken: `INSERT INTO ${d.quote(fenceTable)} (lock_key, fencing_token, locked_by, locked_by_connection, locked_at)
         VALUES (?, ${d.tokenExpression(d.firstToken(fenceTable))}, ?, ?, NOW(3))
         ON DUPLICATE KEY UPDATE fencing_token = ${d.tokenExpression(d.nextToken('fencing_token', fenceTable))}, locked_by = VALUES(locked_by),
           locked_by_connection = VALUES(locked_by_connection), locked_at = VALUES(locked_at)`,
    lockRow(waitSeconds) {
      if (waitSeconds === undefined) return `SELECT lock_key FROM ${rows} WHERE lock_key = ? FOR UPDATE NOWAIT`;
      return d.mariadb
        ? `SELECT lock_key FROM ${rows} WHERE lock_key = ? FOR UPDATE WAIT ${waitSeconds}`
        : `SELECT /*+ SET_VAR(innodb_lock_wait_timeout=${waitSeconds}) */ lock_key FROM ${rows} WHERE lock_key = ? FOR UPDATE`;
    },
  };
}
