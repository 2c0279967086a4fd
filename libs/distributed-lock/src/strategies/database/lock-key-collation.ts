import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import type { LockDataSource } from './database-client.type';
import { lockKeyCollation, lockKeyColumn } from './lock-table.sql';
import type { SqlDialect } from './sql-dialect';

/**
 * Makes sure an existing lock table compares keys byte for byte (see `lockKeyCollation`). Tables made by
 * earlier versions used `utf8mb4_bin`, under which "k" and "k " are one lock. With `ensureTable` the
 * strategy owns the table and converts the column (a lock table is small); otherwise it refuses to run
 * on it and names the statement to apply, since a silent collision of two keys is a lost mutual exclusion.
 */
export async function ensureLockKeyCollation(dataSource: LockDataSource, dialect: SqlDialect, table: string, ensureTable: boolean): Promise<void> {
  if (dialect.name !== 'mysql') return;
  const rows = (await dataSource.query(
    "SELECT COLLATION_NAME AS collation FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = 'lock_key'",
    [table],
  )) as Array<{ collation: string | null }>;
  const current = rows[0]?.collation;
  if (current === undefined || current === lockKeyCollation(dialect)) return;
  const alter = `ALTER TABLE ${dialect.quote(table)} MODIFY lock_key ${lockKeyColumn(dialect)}`;
  if (ensureTable) {
    await dataSource.query(alter);
    return;
  }
  throw new InvalidLockOptionsError(
    'table',
    `the lock_key column of "${table}" uses collation ${String(current)}, which ignores trailing spaces ("k" and "k " would be one lock). ` +
      `Apply this migration: ${alter}`,
  );
}
