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
