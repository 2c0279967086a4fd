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
  insertRow(waitSeconds: number): string;
  /** The same, refused at once instead of waiting behind a lock on the row (tryAcquire). Parameter: key. */
  readonly insertRowNoWait: string;
  /**
   * The fencing token's next value, in autocommit, returned in the statement's result (see
   * `SqlDialect.tokenOf`). Parameters: key, owner, connection id.
   */
  readonly nextToken: string;
  /**
   * On PostgreSQL, the statement that bounds the row lock's wait inside the open transaction (`SET LOCAL
   * lock_timeout`, in ms: exact, where MySQL counts whole seconds). Parameter: the wait as `'<n>ms'`.
   * Undefined on MySQL/MariaDB, whose bound is part of `lockRow`.
   */
  readonly lockTimeout: string | undefined;
  /**
   * Lock the key's row in the open transaction. `waitSeconds` undefined: refuse at once if it is locked
   * (NOWAIT); otherwise wait that long (MariaDB `WAIT n`, MySQL 8 a per-statement lock wait timeout;
   * PostgreSQL: `lockTimeout`, run before). Parameter: key.
   */
  lockRow(waitSeconds: number | undefined): string;
  /** Stops the statement the connection with this server id is running (the wait for a lock), from another connection. */
  cancel(connectionId: number): string;
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
      lockTimeout: d.bind("SELECT set_config('lock_timeout', ?, true)"),
      lockRow: (waitSeconds) => d.bind(`SELECT lock_key FROM ${rows} WHERE lock_key = ? FOR UPDATE${waitSeconds === undefined ? ' NOWAIT' : ''}`),
      cancel: (connectionId) => `SELECT pg_cancel_backend(${Number(connectionId)})`,
    };
  }
  return {
    rowExists: `SELECT 1 AS present FROM ${rows} WHERE lock_key = ?`,
    insertRow: (waitSeconds) => insertWaiting(d, rows, waitSeconds),
    insertRowNoWait: insertWaiting(d, rows, 0),
    nextToken: `INSERT INTO ${d.quote(fenceTable)} (lock_key, fencing_token, locked_by, locked_by_connection, locked_at)
         VALUES (?, ${d.tokenExpression(d.firstToken(fenceTable))}, ?, ?, NOW(3))
         ON DUPLICATE KEY UPDATE fencing_token = ${d.tokenExpression(d.nextToken('fencing_token', fenceTable))}, locked_by = VALUES(locked_by),
           locked_by_connection = VALUES(locked_by_connection), locked_at = VALUES(locked_at)`,
    lockTimeout: undefined,
    lockRow(waitSeconds) {
      if (waitSeconds === undefined) return `SELECT lock_key FROM ${rows} WHERE lock_key = ? FOR UPDATE NOWAIT`;
      return d.mariadb
        ? `SELECT lock_key FROM ${rows} WHERE lock_key = ? FOR UPDATE WAIT ${waitSeconds}`
        : `SELECT /*+ SET_VAR(innodb_lock_wait_timeout=${waitSeconds}) */ lock_key FROM ${rows} WHERE lock_key = ? FOR UPDATE`;
    },
    cancel: (connectionId) => `KILL QUERY ${Number(connectionId)}`,
  };
}

/**
 * MySQL/MariaDB: the row's insert, waiting behind a lock on a row of the same key at most `seconds`.
 * MariaDB takes 0 (do not wait); MySQL's least is 1 s.
 */
function insertWaiting(d: SqlDialect, rows: string, seconds: number): string {
  const insert = d.insertIfMissing(rows, '(lock_key) VALUES (?)');
  const bound = Math.max(0, Math.ceil(seconds));
  return d.mariadb ? `SET STATEMENT innodb_lock_wait_timeout=${bound} FOR ${insert}` : insert.replace(/^INSERT /, `INSERT /*+ SET_VAR(innodb_lock_wait_timeout=${Math.max(1, bound)}) */ `);
}
