import { withLockPoolDefaults } from './database-connection';

describe('withLockPoolDefaults', () => {
  it('turns off mysql2 per-statement stack capture for a MySQL or MariaDB pool the strategy opens', () => {
    expect(withLockPoolDefaults({ type: 'mysql', url: 'mysql://x' }, 'test')).toEqual({ type: 'mysql', url: 'mysql://x', trace: false });
    expect(withLockPoolDefaults({ type: 'mariadb', url: 'mysql://x' }, 'test')).toMatchObject({ trace: false });
  });

  it('keeps an explicit trace, and leaves other databases as they are', () => {
    expect(withLockPoolDefaults({ type: 'mysql', url: 'mysql://x', trace: true }, 'test')).toMatchObject({ trace: true });
    const sqlite = { type: 'better-sqlite3' as const, database: ':memory:' };
    expect(withLockPoolDefaults(sqlite, 'test')).toBe(sqlite);
  });

  it('bounds each PostgreSQL connect at 10 s (pg has no bound of its own), not the wait for a free connection', () => {
    type PgClient = { _connectionTimeoutMillis: number };
    const options = withLockPoolDefaults({ type: 'postgres', url: 'postgres://x', extra: { max: 3 } }, 'test') as { connectTimeoutMS?: number; extra: { max: number; Client: new (config: object) => PgClient } };
    // connectTimeoutMS would bound pg-pool's wait for a free connection too (the acquisition's waitTimeout does).
    expect(options.connectTimeoutMS).toBeUndefined();
    expect(options.extra.max).toBe(3);
    // pg-pool hands each client its own options, connectionTimeoutMillis undefined where TypeORM had none.
    expect(new options.extra.Client({ connectionTimeoutMillis: undefined })._connectionTimeoutMillis).toBe(10_000);
    expect(new options.extra.Client({ connectionTimeoutMillis: 2_000 })._connectionTimeoutMillis).toBe(2_000);
  });

  it('leaves a PostgreSQL connect bound the options set as it is', () => {
    const explicit = { type: 'postgres' as const, url: 'postgres://x', connectTimeoutMS: 2_000 };
    expect(withLockPoolDefaults(explicit, 'test')).toBe(explicit);
    const ownClient = { type: 'postgres' as const, url: 'postgres://x', extra: { Client: class {} } };
    expect(withLockPoolDefaults(ownClient, 'test')).toBe(ownClient);
    // A driver module of the user's makes clients of its own class.
    const ownDriver = { type: 'postgres' as const, url: 'postgres://x', driver: { Pool: class {} } };
    expect(withLockPoolDefaults(ownDriver, 'test')).toBe(ownDriver);
  });

  it('takes a failing member of a replication set offline for a while, not for good, unless told otherwise', () => {
    const master = { url: 'mysql://m' };
    expect(withLockPoolDefaults({ type: 'mysql', replication: { master, slaves: [] } }, 'test')).toMatchObject({ replication: { master, slaves: [], restoreNodeTimeout: 1_000 } });
    expect(withLockPoolDefaults({ type: 'mysql', replication: { master, slaves: [], restoreNodeTimeout: 0 } }, 'test')).toMatchObject({ replication: { restoreNodeTimeout: 0 } });
    expect(withLockPoolDefaults({ type: 'mysql', replication: { master, slaves: [], restoreNodeTimeout: undefined } }, 'test')).toMatchObject({ replication: { restoreNodeTimeout: 1_000 } });
  });
});
