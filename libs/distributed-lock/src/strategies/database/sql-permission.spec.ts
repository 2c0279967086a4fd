import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { LockPermissionDeniedError } from '../../errors/lock-permission-denied.error';
import { LockTableMismatchError } from '../../errors/lock-table-mismatch.error';
import { LockTableMissingError } from '../../errors/lock-table-missing.error';
import { advisoryTokensDdl } from './advisory-lock.sql';
import { sqlDialectFor } from './sql-dialect';
import { sqlCallError } from './sql-permission';

describe('SQL grants named by LockPermissionDeniedError', () => {
  const site = { strategy: 'advisory', operation: 'acquire', key: 'k', tables: ['distributed_lock_advisory_fences'], sequences: ['distributed_lock_advisory_tokens'] };

  it('names USAGE on the sequence for PostgreSQL (42501), and the table grants for MySQL (1142)', () => {
    const postgres = sqlCallError({ driverError: { code: '42501' } }, { ...site, tables: [] });
    expect(postgres).toBeInstanceOf(LockPermissionDeniedError);
    expect((postgres as LockPermissionDeniedError).grant).toBe('GRANT USAGE ON SEQUENCE distributed_lock_advisory_tokens TO <user>;');
    const mysql = sqlCallError({ errno: 1142 }, site);
    expect((mysql as LockPermissionDeniedError).grant).toBe('GRANT SELECT, INSERT, UPDATE ON <database>.`distributed_lock_advisory_fences` TO <user>;');
  });

  it('names the missing table from MySQL\'s, PostgreSQL\'s and SQLite\'s answers, as the strategy spells it', () => {
    const tables = ['locks', { table: 'Locks_Queue', privileges: 'SELECT, INSERT, UPDATE, DELETE' }];
    const mysql = sqlCallError({ errno: 1146, message: "Table 'locktest.locks_queue' doesn't exist" }, { ...site, tables });
    expect(mysql).toBeInstanceOf(LockTableMissingError);
    expect(mysql).toMatchObject({ table: 'Locks_Queue', operation: 'acquire', key: 'k' });
    expect(sqlCallError({ driverError: { code: '42P01', message: 'relation "locks" does not exist' } }, { ...site, tables })).toMatchObject({ table: 'locks' });
    expect(sqlCallError({ code: 'SQLITE_ERROR', message: 'no such table: locks_clock' }, { ...site, tables })).toMatchObject({ table: 'locks_clock' });
  });

  it('names the missing column, and its table where the answer does, from MySQL\'s, PostgreSQL\'s and SQLite\'s answers', () => {
    const tables = ['locks', 'locks_fences'];
    expect(sqlCallError({ errno: 1054, message: "Unknown column 'f.locked_by' in 'field list'" }, { ...site, tables })).toMatchObject({ name: 'LockTableMismatchError', column: 'locked_by', tables, key: 'k' });
    expect(sqlCallError({ driverError: { code: '42703', message: 'column h.owner_id does not exist' } }, { ...site, tables })).toMatchObject({ column: 'owner_id', tables });
    expect(sqlCallError({ driverError: { code: '42703', message: 'column "backend_pid" of relation "my_holders" does not exist' } }, { ...site, tables })).toMatchObject({ column: 'backend_pid', tables: ['my_holders'] });
    expect(sqlCallError({ code: 'SQLITE_ERROR', message: 'table locks has no column named owner' }, { ...site, tables })).toMatchObject({ column: 'owner', tables: ['locks'] });
    const sqlite = sqlCallError({ code: 'SQLITE_ERROR', message: 'no such column: expires_at' }, { ...site, tables });
    expect(sqlite).toBeInstanceOf(LockTableMismatchError);
    expect((sqlite as Error).message).toBe('Strategy "advisory" could not acquire "k": one of its tables ("locks", "locks_fences") has no column "expires_at". It was made by another program or an earlier version: migrate it as docs/migration.md shows, or give the strategy a table of its own.');
  });

  it('leaves any other error as it is', () => {
    const other = { driverError: { code: '40001' } };
    expect(sqlCallError(other, site)).toBe(other);
  });
});

describe('advisoryTokensDdl', () => {
  it('gives the sequence on PostgreSQL and the fence table on MariaDB, under the name given', () => {
    expect(advisoryTokensDdl(sqlDialectFor('postgres'))).toEqual([expect.stringMatching(/^CREATE SEQUENCE IF NOT EXISTS "distributed_lock_advisory_tokens" AS BIGINT START WITH \d+$/)]);
    expect(advisoryTokensDdl(sqlDialectFor('mariadb'), 'my_tokens')).toEqual([expect.stringContaining('CREATE TABLE IF NOT EXISTS `my_tokens`')]);
  });

  it('refuses a name that is not a plain SQL identifier', () => {
    expect(() => advisoryTokensDdl(sqlDialectFor('postgres'), 'tokens; DROP TABLE x')).toThrow(InvalidLockOptionsError);
  });
});
