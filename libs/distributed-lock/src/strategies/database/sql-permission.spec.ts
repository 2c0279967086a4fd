import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { LockPermissionDeniedError } from '../../errors/lock-permission-denied.error';
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
