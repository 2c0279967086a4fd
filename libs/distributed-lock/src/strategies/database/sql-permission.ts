import { LockPermissionDeniedError } from '../../errors/lock-permission-denied.error';

/**
 * MySQL/MariaDB errors that mean "the user lacks a grant": on a table (1142), a column (1143), a database
 * (1044), or a privilege such as PROCESS (1227). A wrong password (1045) is not one of them: it stays a
 * connection failure.
 */
const DENIED = new Set([1044, 1142, 1143, 1227]);
/** PostgreSQL's SQLSTATE for the same: insufficient_privilege. */
const PG_DENIED = '42501';

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
 * statements of docs/security.md for the strategy's tables; any other error is returned as it is.
 */
export function sqlCallError(error: unknown, site: SqlCallSite): unknown {
  const e = error as { errno?: unknown; code?: unknown; driverError?: { errno?: unknown; code?: unknown } } | null;
  const errno = Number(e?.driverError?.errno ?? e?.errno);
  const postgres = (e?.driverError?.code ?? e?.code) === PG_DENIED;
  if (!DENIED.has(errno) && !postgres) return error;
  const grant = [
    ...site.tables
      .map((entry) => (typeof entry === 'string' ? { table: entry, privileges: 'SELECT, INSERT, UPDATE' } : entry))
      .map(({ table, privileges }) => (postgres ? `GRANT ${privileges} ON ${table} TO <user>;` : `GRANT ${privileges} ON <database>.\`${table}\` TO <user>;`)),
    ...(postgres ? (site.sequences ?? []).map((sequence) => `GRANT USAGE ON SEQUENCE ${sequence} TO <user>;`) : []),
  ].join(' ');
  return new LockPermissionDeniedError(site.strategy, site.operation, grant, { key: site.key, cause: error });
}
