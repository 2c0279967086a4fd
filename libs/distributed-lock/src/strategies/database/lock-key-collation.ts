import { InvalidLockKeyError } from '../../errors/invalid-lock-key.error';
import type { LockDataSource } from './database-client.type';
import { lockKeyCollation, lockKeyColumn } from './lock-table.sql';
import type { SqlDialect } from './sql-dialect';

/**
 * Whether an existing lock table's key column ignores trailing spaces. Tables made by earlier versions use
 * `utf8mb4_bin`, a PAD SPACE collation under which "k" and "k " are one primary key, hence one lock. The
 * strategy does not convert such a table itself: an ALTER TABLE waits for every open transaction on the
 * table (a pessimistic lock holder of an older version during a rolling upgrade) and blocks every lock
 * behind it meanwhile. It refuses the only keys the collation confuses instead (see `assertKeyDistinct`),
 * naming the migration to run in a quiet moment. Resolves the statement when the column pads, else undefined.
 */
export async function paddingMigration(dataSource: LockDataSource, dialect: SqlDialect, table: string): Promise<string | undefined> {
  if (dialect.name !== 'mysql') return undefined;
  const rows = (await dataSource.query(
    "SELECT COLLATION_NAME AS collation FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = 'lock_key'",
    [table],
  )) as Array<{ collation: string | null }>;
  const current = rows[0]?.collation;
  if (current === undefined || current === null || current === lockKeyCollation(dialect) || /nopad|_0900_/.test(current)) return undefined;
  return `ALTER TABLE ${dialect.quote(table)} MODIFY lock_key ${lockKeyColumn(dialect)}`;
}

/**
 * Refuses a key ending in a space on a table whose key column pads (see `paddingMigration`): there it
 * would be the same lock as the key without the space.
 */
export function assertKeyDistinct(key: string, table: string, migration: string | undefined): void {
  if (migration === undefined || !key.endsWith(' ')) return;
  throw new InvalidLockKeyError(
    key,
    `the lock table "${table}" was created by an earlier version and compares keys ignoring trailing spaces, so this key would be the ` +
      `same lock as the one without them. Remove the trailing spaces, or migrate the table in a quiet moment: ${migration}`,
  );
}
