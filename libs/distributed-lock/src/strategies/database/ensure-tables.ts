import type { LockDataSource } from './database-client.type';
import { runDdl } from './database-connection';
import type { SqlDialect } from './sql-dialect';

/** A table and the statements that make it (CREATE TABLE IF NOT EXISTS, then its companions). */
export interface TableDdl {
  readonly table: string;
  readonly statements: readonly string[];
}

/**
 * Makes the tables that are missing, and only those. On MySQL/MariaDB even `CREATE TABLE IF NOT EXISTS`
 * needs the CREATE privilege, which the server checks before it looks for the table: a least-privilege
 * user whose tables an administrator made from the DDL helpers must never send it. information_schema
 * shows a user the tables it holds any privilege on, so an existing lock table is always found. PostgreSQL
 * checks CREATE on the schema before it looks for the table too.
 */
export async function createMissingTables(dataSource: LockDataSource, dialect: SqlDialect, tables: readonly TableDdl[]): Promise<void> {
  let missing = tables;
  if (dialect.name === 'mysql' || dialect.name === 'postgres') {
    const sql =
      dialect.name === 'mysql'
        ? `SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (${tables.map(() => '?').join(', ')})`
        : `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_name IN (${tables.map((_, i) => `$${i + 1}`).join(', ')})`;
    const rows = (await dataSource.query(sql, tables.map((entry) => entry.table))) as Array<{ name: string }>;
    const present = new Set(rows.map((row) => row.name));
    missing = tables.filter((entry) => !present.has(entry.table));
  }
  for (const entry of missing) await runDdl(dataSource, entry.statements);
}

/**
 * Makes a PostgreSQL sequence (the advisory strategy's tokens) only when it is missing, for the same reason
 * as the tables: `CREATE SEQUENCE IF NOT EXISTS` needs CREATE on the schema even when the sequence exists.
 * pg_class shows every sequence whatever the role's grants, so one the role may not use is found, and its
 * `nextval` then names the missing USAGE, not the CREATE nobody needs.
 */
export async function createMissingSequence(dataSource: LockDataSource, sequence: string, statements: readonly string[]): Promise<void> {
  const rows = (await dataSource.query(
    "SELECT 1 AS present FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'S' AND c.relname = $1 AND n.nspname = current_schema()",
    [sequence],
  )) as unknown[];
  if (rows.length === 0) await runDdl(dataSource, statements);
}
