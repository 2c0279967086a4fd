import { withLockPoolDefaults } from './database-connection';

describe('withLockPoolDefaults', () => {
  it('turns off mysql2 per-statement stack capture for a MySQL or MariaDB pool the strategy opens', () => {
    expect(withLockPoolDefaults({ type: 'mysql', url: 'mysql://x' })).toEqual({ type: 'mysql', url: 'mysql://x', trace: false });
    expect(withLockPoolDefaults({ type: 'mariadb', url: 'mysql://x' })).toMatchObject({ trace: false });
  });

  it('keeps an explicit trace, and leaves other databases as they are', () => {
    expect(withLockPoolDefaults({ type: 'mysql', url: 'mysql://x', trace: true })).toMatchObject({ trace: true });
    const sqlite = { type: 'better-sqlite3' as const, database: ':memory:' };
    expect(withLockPoolDefaults(sqlite)).toBe(sqlite);
  });

  it('takes a failing member of a replication set offline for a while, not for good, unless told otherwise', () => {
    const master = { url: 'mysql://m' };
    expect(withLockPoolDefaults({ type: 'mysql', replication: { master, slaves: [] } })).toMatchObject({ replication: { master, slaves: [], restoreNodeTimeout: 1_000 } });
    expect(withLockPoolDefaults({ type: 'mysql', replication: { master, slaves: [], restoreNodeTimeout: 0 } })).toMatchObject({ replication: { restoreNodeTimeout: 0 } });
    expect(withLockPoolDefaults({ type: 'mysql', replication: { master, slaves: [], restoreNodeTimeout: undefined } })).toMatchObject({ replication: { restoreNodeTimeout: 1_000 } });
  });
});
