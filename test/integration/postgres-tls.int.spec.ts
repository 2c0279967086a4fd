import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { DataSource, Entity } from 'typeorm';
import { LockManager, LockPermissionDeniedError, LockService, VersionConflictError } from '@app/distributed-lock';
import { AdvisoryLockStrategy, lockTransaction, optimisticUpdate, PessimisticLockStrategy, RowLockStrategy, semaphoreTablesDdl, sqlDialectFor } from '@app/distributed-lock/strategies/database';
import { POSTGRES_TLS, postgresLockGrants, postgresSemaphoreGrants, startTopology, stopTopology, type RunningTopology } from '../../scripts/services';
import { expectLeaseLockThroughUser, expectPermitsThroughUser, expectServerWaitThroughUser, expectEndsThroughUser } from '../support/least-privilege-locks';
import { ensureSecurePackages, postgresTlsOptions } from '../support/secure-servers';
import { StockRow } from '../support/stock-row.entity';

/** The application's own table with a version column (the stock fixture's columns): what `optimisticUpdate` writes. */
@Entity({ name: 'inventory' })
class Inventory extends StockRow {}

const { admin, app } = POSTGRES_TLS.users;
const run = randomUUID().slice(0, 8);
/** The recipe's grant for the application's table with the version column (docs/security.md). */
const VERSION_TABLE_GRANT = `GRANT SELECT, UPDATE ON inventory TO ${app.name};`;
/** The order PostgreSQL's GRANT lists privileges in, to rebuild the statements from the catalogs. */
const PRIVILEGE_ORDER = ['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER', 'USAGE', 'CONNECT', 'CREATE', 'TEMPORARY'];

/**
 * Every privilege granted to `role`, from the catalogs, as one GRANT statement per object: the database,
 * schemas, tables and sequences (`aclexplode` of their ACLs), columns and functions included so that a
 * stray grant of any kind shows.
 */
async function grantsOf(dataSource: DataSource, role: string): Promise<string[]> {
  const rows = (await dataSource.query(
    `SELECT 'DATABASE ' || d.datname AS object, a.privilege_type AS privilege FROM pg_database d, aclexplode(d.datacl) a WHERE a.grantee = $1::text::regrole
     UNION ALL SELECT 'SCHEMA ' || n.nspname, a.privilege_type FROM pg_namespace n, aclexplode(n.nspacl) a WHERE a.grantee = $1::text::regrole
     UNION ALL SELECT CASE c.relkind WHEN 'S' THEN 'SEQUENCE ' ELSE '' END || c.relname, a.privilege_type FROM pg_class c, aclexplode(c.relacl) a WHERE a.grantee = $1::text::regrole
     UNION ALL SELECT 'COLUMN ' || attrelid::regclass || '.' || attname, a.privilege_type FROM pg_attribute, aclexplode(attacl) a WHERE a.grantee = $1::text::regrole
     UNION ALL SELECT 'FUNCTION ' || p.oid::regprocedure, a.privilege_type FROM pg_proc p, aclexplode(p.proacl) a WHERE a.grantee = $1::text::regrole`,
    [role],
  )) as Array<{ object: string; privilege: string }>;
  const byObject = new Map<string, string[]>();
  for (const row of rows) byObject.set(row.object, [...(byObject.get(row.object) ?? []), row.privilege]);
  return [...byObject].map(([object, privileges]) => {
    const ordered = privileges.sort((a, b) => PRIVILEGE_ORDER.indexOf(a) - PRIVILEGE_ORDER.indexOf(b));
    return `GRANT ${ordered.join(', ')} ON ${object} TO ${role};`;
  });
}

/**
 * PostgreSQL with TCP through TLS only (`hostssl`) and the library's role holding only the grants of
 * docs/security.md on objects an administrator made from the DDL helpers: the three SQL strategies (the
 * advisory one in both scopes) and `optimisticUpdate` work through it with their defaults
 * (`ensureTable: true` included), so the library never needs CREATE at run time.
 */
describe('PostgreSQL with TLS required and a least-privilege role', () => {
  let topology: RunningTopology;
  let root: DataSource;
  const managers: LockManager[] = [];
  const dataSources: DataSource[] = [];
  const roles: string[] = [];

  function locks(strategy: RowLockStrategy | PessimisticLockStrategy | AdvisoryLockStrategy): LockService {
    const manager = new LockManager(strategy, { operationTimeout: 5_000 });
    managers.push(manager);
    return new LockService(manager);
  }

  async function connect(username: string, password: string): Promise<DataSource> {
    const dataSource = new DataSource({ ...postgresTlsOptions(username, password), entities: [Inventory] });
    dataSources.push(dataSource);
    return dataSource.initialize();
  }

  beforeAll(async () => {
    ensureSecurePackages();
    topology = await startTopology('postgres-tls');
    root = new DataSource({ ...postgresTlsOptions(admin.name, admin.password), entities: [Inventory], synchronize: true });
    await root.initialize();
    await root.query(VERSION_TABLE_GRANT);
  }, 300_000);

  afterAll(async () => {
    for (const manager of managers) await manager.close().catch(() => undefined);
    for (const dataSource of dataSources) if (dataSource.isInitialized) await dataSource.destroy();
    for (const role of roles) await root?.query(`DROP OWNED BY ${role}; DROP ROLE ${role}`).catch(() => undefined);
    await root?.destroy();
    if (topology?.managed) await stopTopology('postgres-tls');
  }, 30_000);

  it('refuses a connection without TLS, and runs the session through TLS', async () => {
    const plain = new DataSource({ ...postgresTlsOptions(app.name, app.password), ssl: false });
    await expect(plain.initialize()).rejects.toThrow(/no pg_hba\.conf entry .* no encryption/);
    const secure = await connect(app.name, app.password);
    const [session] = (await secure.query('SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()')) as Array<{ ssl: boolean; version: string }>;
    expect(session).toEqual({ ssl: true, version: expect.stringMatching(/^TLSv1\.[23]$/) as unknown });
  });

  it('gives the role exactly the grants of the recipe in docs/security.md, and nothing else', async () => {
    const expected = [...postgresLockGrants(POSTGRES_TLS.database, POSTGRES_TLS.schema, app.name), VERSION_TABLE_GRANT];
    const recipe = readFileSync('docs/security.md', 'utf8');
    for (const grant of expected) expect(recipe).toContain(grant);
    expect((await grantsOf(root, app.name)).sort()).toEqual(expected.sort());
    // No role attribute, no membership in another role (pg_read_all_data would be one), no default privilege.
    const [attributes] = (await root.query(
      `SELECT rolsuper, rolcreatedb, rolcreaterole, rolbypassrls, rolreplication, rolinherit,
        (SELECT count(*)::int FROM pg_auth_members WHERE member = r.oid) AS memberships,
        (SELECT count(*)::int FROM pg_default_acl, aclexplode(defaclacl) a WHERE a.grantee = r.oid) AS defaults
       FROM pg_roles r WHERE rolname = $1`,
      [app.name],
    )) as Array<Record<string, unknown>>;
    expect(attributes).toEqual({ rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolbypassrls: false, rolreplication: false, rolinherit: true, memberships: 0, defaults: 0 });
  });

  it('locks with the row strategy (lease table) through TLS, with no CREATE grant', async () => {
    const service = locks(new RowLockStrategy({ connection: postgresTlsOptions(app.name, app.password) }));
    const contender = locks(new RowLockStrategy({ connection: postgresTlsOptions(app.name, app.password) }));
    await expectLeaseLockThroughUser(service, contender, `tls:${run}:row`);
  });

  it('locks with the pessimistic strategy (SELECT … FOR UPDATE) through TLS, with no CREATE grant', async () => {
    const service = locks(new PessimisticLockStrategy({ connection: postgresTlsOptions(app.name, app.password) }));
    const contender = locks(new PessimisticLockStrategy({ connection: postgresTlsOptions(app.name, app.password) }));
    await expectServerWaitThroughUser(service, contender, `tls:${run}:pessimistic`);
  });

  it.each(['session', 'transaction'] as const)('locks with the advisory strategy (%s scope) through TLS, tokens from the sequence, with no CREATE grant', async (scope) => {
    const service = locks(new AdvisoryLockStrategy({ connection: postgresTlsOptions(app.name, app.password), scope }));
    const contender = locks(new AdvisoryLockStrategy({ connection: postgresTlsOptions(app.name, app.password), scope }));
    await expectServerWaitThroughUser(service, contender, `tls:${run}:advisory:${scope}`);
  });

  it('names the advisory holder (owner, token) and breaks it through the role, with no grant beyond the holder table\'s', async () => {
    const holder = locks(new AdvisoryLockStrategy({ connection: postgresTlsOptions(app.name, app.password), holders: true }));
    const operator = locks(new AdvisoryLockStrategy({ connection: postgresTlsOptions(app.name, app.password), holders: true }));
    const key = `tls:${run}:advisory:query`;
    const lock = await holder.acquire(key, { ttl: 10_000 });
    const [held] = (await operator.query(key)).held;
    expect([held?.owner.id, held?.fencingToken]).toEqual([lock.owner, lock.fencingToken]);
    expect((await operator.breakLock(key, { reason: 'test' })).map((broken) => broken.owner.id)).toEqual([lock.owner]);
    await expect.poll(() => lock.signal.aborted, { timeout: 5_000 }).toBe(true);
    await lock.release().catch(() => undefined);
    expect((await operator.query(key)).held).toEqual([]);
  });

  it.each([
    ['pessimistic', () => new PessimisticLockStrategy({ connection: postgresTlsOptions(app.name, app.password) })],
    ['advisory', () => new AdvisoryLockStrategy({ connection: postgresTlsOptions(app.name, app.password) })],
  ] as const)('ends an aborted wait and a closed instance\'s lock of the %s strategy through the role\'s own pg_terminate_backend, with no pg_signal_backend', async (name, create) => {
    const make = (): { manager: LockManager; locks: LockService } => {
      const manager = new LockManager(create(), { operationTimeout: 5_000 });
      managers.push(manager);
      return { manager, locks: new LockService(manager) };
    };
    await expectEndsThroughUser(make, `tls:${run}:${name}-ends`);
  });

  it('updates a version column with optimisticUpdate, inside an advisory lock transaction too', async () => {
    const sku = `tls-${run}`;
    await root.getRepository(Inventory).insert({ sku, quantity: 5 });
    const dataSource = await connect(app.name, app.password);
    await optimisticUpdate({ manager: dataSource.manager, entity: Inventory, id: sku, expectedVersion: 1, set: { quantity: 4 } });
    const stale = await optimisticUpdate({ manager: dataSource.manager, entity: Inventory, id: sku, expectedVersion: 1, set: { quantity: 3 } }).catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(VersionConflictError);
    const service = locks(new AdvisoryLockStrategy({ dataSource, scope: 'transaction' }));
    await service.withLock(`tls:${run}:inventory`, async (lock) => {
      await optimisticUpdate({ manager: lockTransaction(lock), entity: Inventory, id: sku, expectedVersion: 2, set: { quantity: 3 } });
    });
    expect(await root.getRepository(Inventory).findOneByOrFail({ sku })).toMatchObject({ quantity: 3, version: 3 });
  });

  it('a role of locks only needs no grant on the semaphore tables until it asks for a permit, then gets LockPermissionDeniedError naming them', async () => {
    const service = locks(new RowLockStrategy({ connection: postgresTlsOptions(app.name, app.password) }));
    const lock = await service.acquire(`tls:${run}:locks-only`);
    expect(await lock.release()).toBe(true);
    const error = await service.acquirePermit(`tls:${run}:permit`, { permits: 2, waitTimeout: 600_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockPermissionDeniedError);
    expect((error as LockPermissionDeniedError).grant).toContain('GRANT SELECT, INSERT, UPDATE, DELETE ON distributed_lock_permits TO <user>;');
  }, 20_000);

  it('gives permits to a role with the semaphore grants on tables an administrator made, with no CREATE grant', async () => {
    const role = `sem_${run}`;
    roles.push(role);
    // The administrator's migration, from the DDL helper; the role gets the recipe's lock and semaphore grants.
    for (const statement of semaphoreTablesDdl(sqlDialectFor('postgres'))) await root.query(statement);
    await root.query(`CREATE ROLE ${role} LOGIN PASSWORD '${role}-pw'`);
    for (const grant of [...postgresLockGrants(POSTGRES_TLS.database, POSTGRES_TLS.schema, role), ...postgresSemaphoreGrants(role)]) await root.query(grant);
    expect(readFileSync('docs/security.md', 'utf8')).toContain(postgresSemaphoreGrants(app.name).join('\n'));
    const options = postgresTlsOptions(role, `${role}-pw`);
    const service = locks(new RowLockStrategy({ connection: options }));
    const contender = locks(new RowLockStrategy({ connection: options }));
    await expectPermitsThroughUser(service, contender, `tls:${run}:semaphore`);
  });

  it.each([
    {
      strategy: 'row',
      withheld: 'UPDATE on the lease table',
      grants: ['GRANT SELECT, INSERT ON distributed_lock_leases'],
      named: 'GRANT SELECT, INSERT, UPDATE ON distributed_lock_leases TO <user>;',
    },
    {
      strategy: 'pessimistic',
      withheld: 'UPDATE on the row table (FOR UPDATE)',
      grants: ['GRANT SELECT, INSERT ON distributed_lock_rows', 'GRANT SELECT, INSERT, UPDATE ON distributed_lock_fences'],
      named: 'GRANT SELECT, INSERT, UPDATE ON distributed_lock_rows TO <user>;',
    },
    {
      strategy: 'pessimistic',
      withheld: 'every grant on the fence table',
      grants: ['GRANT SELECT, INSERT, UPDATE ON distributed_lock_rows'],
      named: 'GRANT SELECT, INSERT, UPDATE ON distributed_lock_fences TO <user>;',
    },
    { strategy: 'advisory', withheld: 'USAGE on the token sequence', grants: [], named: 'GRANT USAGE ON SEQUENCE distributed_lock_advisory_tokens TO <user>;' },
    {
      strategy: 'advisory-holders',
      withheld: 'every grant on the holder table (holders: true)',
      grants: ['GRANT USAGE ON SEQUENCE distributed_lock_advisory_tokens'],
      named: 'GRANT SELECT, INSERT, UPDATE ON distributed_lock_advisory_holders TO <user>;',
    },
  ])('a role without $withheld gets LockPermissionDeniedError from the $strategy strategy, naming the GRANT, without waiting', async ({ strategy, grants, named }) => {
    const role = `short_${randomUUID().slice(0, 8)}`;
    roles.push(role);
    await root.query(`CREATE ROLE ${role} LOGIN PASSWORD '${role}-pw'`);
    await root.query(`GRANT CONNECT ON DATABASE ${POSTGRES_TLS.database} TO ${role}`);
    await root.query(`GRANT USAGE ON SCHEMA ${POSTGRES_TLS.schema} TO ${role}`);
    for (const grant of grants) await root.query(`${grant} TO ${role}`);
    const connection = postgresTlsOptions(role, `${role}-pw`);
    const strategies = { row: () => new RowLockStrategy({ connection }), pessimistic: () => new PessimisticLockStrategy({ connection }), advisory: () => new AdvisoryLockStrategy({ connection }), 'advisory-holders': () => new AdvisoryLockStrategy({ connection, holders: true }) };
    const service = locks(strategies[strategy as keyof typeof strategies]());
    // A wait far beyond the test's timeout: the refusal must end it, not the clock.
    const error = await service.acquire(`tls:${run}:${role}`, { waitTimeout: 600_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockPermissionDeniedError);
    expect((error as LockPermissionDeniedError).grant).toContain(named);
    expect((error as LockPermissionDeniedError).cause).toMatchObject({ driverError: { code: '42501' } });
  }, 20_000);
});
