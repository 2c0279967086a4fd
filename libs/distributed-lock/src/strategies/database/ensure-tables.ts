import type { LockDataSource } from './database-client.type';
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
 * shows a user the tables it holds any privilege on, so an existing lock table is always found.
 */
export async function createMissingTables(dataSource: LockDataSource, dialect: SqlDialect, tables: readonly TableDdl[]): Promise<void> {
  let missing = tables;
  if (dialect.name === 'mysql') {
    const rows = (await dataSource.query(
      `SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (${tables.map(() => '?').join(', ')})`,
      tables.map((entry) => entry.table),
    )) as Array<{ name: string }>;
    const present = new Set(rows.map((row) => row.name));
    missing = tables.filter((entry) => !present.has(entry.table));
  }
  for (const entry of missing) for (const statement of entry.statements) await dataSource.query(statement);
}
