import type { LockInspection } from '../../locking/lock-query';
import type { LockDataSource } from './database-client.type';
import { pinnedOperatorCalls, rowLockHolderStatements } from './pinned-lock-inspection';
import { markedRowHolderStatements, rowHolderMarker } from './row-holder-marker';
import type { SqlDialect } from './sql-dialect';
import { sqlCallError } from './sql-permission';

/**
 * The pessimistic strategy's `inspect` and `breakLock`: on PostgreSQL from the row lock's own record
 * (`rowLockHolderStatements`), on MySQL/MariaDB from the marks of `holders: true` (`markedRowHolderStatements`;
 * the look at an unmarked row lock is a locking read, which MySQL 8 grants with UPDATE). A refused grant
 * names the GRANT to run.
 */
export function rowLockOperatorCalls(
  dataSource: LockDataSource,
  strategy: string,
  fastPaths: boolean,
  postgres: boolean,
  tables: { readonly rows: string; readonly fences: string },
  dialect: () => Promise<SqlDialect>,
): { inspect: (key: string) => Promise<LockInspection>; breakLock: (key: string, signal?: AbortSignal) => Promise<LockInspection['holders']> } {
  const statements = async () => {
    const d = await dialect();
    return postgres ? rowLockHolderStatements(d, tables.rows, tables.fences) : markedRowHolderStatements(d, tables.rows, tables.fences, (key) => rowHolderMarker(tables.rows, key));
  };
  const grants = [{ table: tables.rows, privileges: postgres ? 'SELECT' : 'SELECT, UPDATE' }, { table: tables.fences, privileges: 'SELECT' }];
  return pinnedOperatorCalls(dataSource, fastPaths, postgres ? 'PostgreSQL' : 'MySQL', statements, (error, operation, key) => sqlCallError(error, { strategy, operation, key, tables: grants }));
}
