import { LockPermissionDeniedError } from '../../errors/lock-permission-denied.error';
import { LockTableMismatchError } from '../../errors/lock-table-mismatch.error';
import { LockTableMissingError } from '../../errors/lock-table-missing.error';

/**
 * MySQL/MariaDB errors that mean "the user lacks a grant": on a table (1142), a column (1143), a database
 * (1044), or a privilege such as PROCESS (1227). A wrong password (1045) is not one of them: it stays a
 * connection failure.
 */
const DENIED = new Set([1044, 1142, 1143, 1227]);
/** PostgreSQL's SQLSTATE for the same: insufficient_privilege. */
const PG_DENIED = '42501';
/** "No such table": MySQL/MariaDB's errno, PostgreSQL's SQLSTATE (undefined_table), SQLite's message. */
const NO_SUCH_TABLE = 1146;
const PG_NO_SUCH_TABLE = '42P01';
const SQLITE_NO_SUCH_TABLE = /no such table: (?:\w+\.)?(\w+)/i;
/** "No such column": MySQL/MariaDB's errno (ER_BAD_FIELD_ERROR), PostgreSQL's SQLSTATE (undefined_column). */
const NO_SUCH_COLUMN = 1054;
const PG_NO_SUCH_COLUMN = '42703';
/**
 * The server's words for a missing column: MySQL's "Unknown column 'f.x' in 'field list'", PostgreSQL's
 * 'column "x" of relation "t" does not exist' (or 'column f.x …'), SQLite's "no such column: x" and
 * "table t has no column named x". The column comes without its alias; the table where it is named.
 */
const MISSING_COLUMN = [
  /unknown column '(?:[^'.]+\.)?([^']+)'/i,
  /column "?(?:[^".\s]+\.)?([^"\s]+)"? (?:of relation "([^"]+)" )?does not exist/i,
  /no such column: (?:\w+\.)?(\w+)/i,
  /table (\w+) has no column named (\w+)/i,
];

/** Where an SQL strategy's call was made, for the error that says what to grant. */
export interface SqlCallSite {
  readonly strategy: string;
  readonly operation: string;
  /**
   * The strategy's tables: the grant names them all, each with SELECT, INSERT, UPDATE unless it names its
   * own privileges (the semaphores' permits table also needs DELETE).
   */
  readonly tables: ReadonlyArray<string | { readonly table: string; readonly privileges: string }>;
  /** PostgreSQL sequences it draws from (the advisory strategy's tokens): the grant names USAGE on them. */
  readonly sequences?: readonly string[];
  readonly key?: string;
}

/**
 * What to throw for a failed SQL call: a refused grant becomes `LockPermissionDeniedError` naming the GRANT
 * statements of docs/security.md for the strategy's tables, a missing table `LockTableMissingError` naming
 * it, and a table without a column the statement names `LockTableMismatchError`; any other error is
 * returned as it is.
 */
export function sqlCallError(error: unknown, site: SqlCallSite): unknown {
  const e = error as { errno?: unknown; code?: unknown; message?: unknown; driverError?: { errno?: unknown; code?: unknown; message?: unknown } } | null;
  const errno = Number(e?.driverError?.errno ?? e?.errno);
  const code = e?.driverError?.code ?? e?.code;
  if (errno === NO_SUCH_TABLE || code === PG_NO_SUCH_TABLE || SQLITE_NO_SUCH_TABLE.test(String(e?.driverError?.message ?? e?.message))) {
    return new LockTableMissingError(site.strategy, site.operation, missingTable(String(e?.driverError?.message ?? e?.message), site), { key: site.key, cause: error });
  }
  if (errno === NO_SUCH_COLUMN || code === PG_NO_SUCH_COLUMN || /no such column|has no column named/i.test(String(e?.driverError?.message ?? e?.message))) {
    const { column, table } = missingColumn(String(e?.driverError?.message ?? e?.message));
    const tables = table === undefined ? site.tables.map((entry) => (typeof entry === 'string' ? entry : entry.table)) : [table];
    return new LockTableMismatchError(site.strategy, site.operation, column, tables, { key: site.key, cause: error });
  }
  const postgres = code === PG_DENIED;
  if (!DENIED.has(errno) && !postgres) return error;
  const grant = [
    ...site.tables
      .map((entry) => (typeof entry === 'string' ? { table: entry, privileges: 'SELECT, INSERT, UPDATE' } : entry))
      .map(({ table, privileges }) => (postgres ? `GRANT ${privileges} ON ${table} TO <user>;` : `GRANT ${privileges} ON <database>.\`${table}\` TO <user>;`)),
    ...(postgres ? (site.sequences ?? []).map((sequence) => `GRANT USAGE ON SEQUENCE ${sequence} TO <user>;`) : []),
  ].join(' ');
  return new LockPermissionDeniedError(site.strategy, site.operation, grant, { key: site.key, cause: error });
}

/** The server's words for a missing table, each with the table's name (after the database's on MySQL). */
const MISSING_TABLE_NAMES = [/table '(?:[^'.]+\.)?([^']+)' doesn't exist/i, /relation "(?:[^".]+\.)?([^"]+)" does not exist/i, SQLITE_NO_SUCH_TABLE];

/** Which table the server says is missing, as the strategy spells it when it is one of the site's. */
function missingTable(message: string, site: SqlCallSite): string {
  const said = MISSING_TABLE_NAMES.map((pattern) => pattern.exec(message)?.[1]).find((name) => name !== undefined);
  if (said === undefined) return 'unknown (see the cause)';
  const names = site.tables.map((entry) => (typeof entry === 'string' ? entry : entry.table));
  return names.find((name) => name.toLowerCase() === said.toLowerCase()) ?? said;
}

/** The column (and the table, where named) of the server's answer about a missing column. */
function missingColumn(message: string): { column: string; table: string | undefined } {
  const sqliteNamed = MISSING_COLUMN[3].exec(message);
  if (sqliteNamed) return { column: sqliteNamed[2], table: sqliteNamed[1] };
  for (const pattern of MISSING_COLUMN.slice(0, 3)) {
    const match = pattern.exec(message);
    if (match) return { column: match[1], table: match[2] };
  }
  return { column: 'unknown (see the cause)', table: undefined };
}
