import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { DataSource } from 'typeorm';
import { LockManager, LockPermissionDeniedError, LockService } from '@app/distributed-lock';
import { PessimisticLockStrategy, RowLockStrategy, semaphoreTablesDdl, sqlDialectFor } from '@app/distributed-lock/strategies/database';
import { lockTableGrants, MARIADB_TLS, semaphoreTableGrants, startTopology, stopTopology, type RunningTopology } from '../../scripts/services';
import { expectEndsThroughUser, expectLeaseLockThroughUser, expectPermitsThroughUser, expectServerWaitThroughUser } from '../support/least-privilege-locks';
import { ensureSecurePackages, mariadbTlsOptions } from '../support/secure-servers';

const { app } = MARIADB_TLS.users;
const run = randomUUID().slice(0, 8);

/**
 * MariaDB with TLS required on every TCP connection, and the library's user holding only the grants of
 * docs/security.md on tables an administrator made from the DDL helpers: both SQL strategies lock through
 * it with their defaults (`ensureTable: true` included), so the library never needs CREATE at run time, and
 * a user of locks only needs no grant on the semaphores' tables.
 */
describe('MariaDB with TLS required and a least-privilege user', () => {
  let topology: RunningTopology;
  let root: DataSource;
  const managers: LockManager[] = [];

  function locks(strategy: RowLockStrategy | PessimisticLockStrategy): LockService {
    const manager = new LockManager(strategy, { operationTimeout: 5_000 });
    managers.push(manager);
    return new LockService(manager);
  }

  beforeAll(async () => {
    ensureSecurePackages();
    topology = await startTopology('mariadb-tls');
    root = new DataSource(mariadbTlsOptions(MARIADB_TLS.users.root.name, MARIADB_TLS.users.root.password));
    await root.initialize();
  }, 300_000);

  afterAll(async () => {
    for (const manager of managers) await manager.close().catch(() => undefined);
    await root?.destroy();
    if (topology?.managed) await stopTopology('mariadb-tls');
  }, 30_000);

  it('refuses a connection without TLS, and the recipe holds exactly the grants the user has', async () => {
    const plain = new DataSource({ ...mariadbTlsOptions(app.name, app.password), ssl: undefined });
    await expect(plain.initialize()).rejects.toThrow(/insecure transport|Access denied/);
    const secure = new DataSource(mariadbTlsOptions(app.name, app.password));
    await secure.initialize();
    try {
      const [status] = (await secure.query("SHOW SESSION STATUS LIKE 'Ssl_version'")) as Array<{ Value: string }>;
      expect(status.Value).toMatch(/^TLS/);
      const grants = ((await secure.query('SHOW GRANTS')) as Array<Record<string, string>>).map((row) => Object.values(row)[0]);
      const recipe = readFileSync('docs/security.md', 'utf8');
      for (const grant of lockTableGrants(MARIADB_TLS.database, "'lock_app'@'%'")) expect(recipe).toContain(grant);
      // The semaphores' grants are in the recipe for those who use them; this user locks without them.
      for (const grant of semaphoreTableGrants(MARIADB_TLS.database, "'lock_app'@'%'")) expect(recipe).toContain(grant);
      // The server's own words for the recipe's grants: nothing more (USAGE is the login itself).
      expect(grants.filter((g) => !g.startsWith('GRANT USAGE')).sort()).toEqual(
        lockTableGrants(MARIADB_TLS.database, '`lock_app`@`127.0.0.1`').sort(),
      );
    } finally {
      await secure.destroy();
    }
  });

  it('locks with the row strategy (lease table) through TLS, with no CREATE grant', async () => {
    const service = locks(new RowLockStrategy({ connection: mariadbTlsOptions(app.name, app.password) }));
    const contender = locks(new RowLockStrategy({ connection: mariadbTlsOptions(app.name, app.password) }));
    await expectLeaseLockThroughUser(service, contender, `tls:${run}:row`);
  });

  it('locks with the pessimistic strategy (SELECT … FOR UPDATE) through TLS, with no CREATE grant', async () => {
    const service = locks(new PessimisticLockStrategy({ connection: mariadbTlsOptions(app.name, app.password) }));
    const contender = locks(new PessimisticLockStrategy({ connection: mariadbTlsOptions(app.name, app.password) }));
    await expectServerWaitThroughUser(service, contender, `tls:${run}:pessimistic`);
  });

  it('ends an aborted wait and a closed instance\'s lock through the user\'s own KILL CONNECTION, with no PROCESS grant', async () => {
    const make = (): { manager: LockManager; locks: LockService } => {
      const manager = new LockManager(new PessimisticLockStrategy({ connection: mariadbTlsOptions(app.name, app.password) }), { operationTimeout: 5_000 });
      managers.push(manager);
      return { manager, locks: new LockService(manager) };
    };
    await expectEndsThroughUser(make, `tls:${run}:pessimistic-ends`);
  });

  it('names the holder of a pessimistic lock with holders: true, and breaks it, with no PROCESS grant', async () => {
    const options = mariadbTlsOptions(app.name, app.password);
    const holder = locks(new PessimisticLockStrategy({ connection: options, holders: true }));
    const operator = locks(new PessimisticLockStrategy({ connection: options, holders: true }));
    const key = `tls:${run}:pessimistic-holders`;
    const lock = await holder.acquire(key, { ttl: 10_000 });
    const [held] = (await operator.query(key)).held;
    expect([held?.owner.id, held?.fencingToken]).toEqual([lock.owner, lock.fencingToken]);
    expect((await operator.breakLock(key, { reason: 'tls test' })).map((h) => h.owner.id)).toEqual([lock.owner]);
    await new Promise((resolve) => (lock.signal.aborted ? resolve(undefined) : lock.signal.addEventListener('abort', resolve)));
    expect(await lock.release()).toBe(false);
    expect((await operator.query(key)).held).toEqual([]);
  });

  it('a user of locks only needs no grant on the semaphore tables until it asks for a permit, then gets LockPermissionDeniedError naming them', async () => {
    const service = locks(new RowLockStrategy({ connection: mariadbTlsOptions(app.name, app.password) }));
    const lock = await service.acquire(`tls:${run}:locks-only`);
    expect(await lock.release()).toBe(true);
    const error = await service.acquirePermit(`tls:${run}:permit`, { permits: 2, waitTimeout: 1_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockPermissionDeniedError);
    expect((error as LockPermissionDeniedError).grant).toContain('GRANT SELECT, INSERT, UPDATE, DELETE ON <database>.`distributed_lock_permits` TO <user>;');
  });

  it('gives permits to a user with the semaphore grants on tables an administrator made, with no CREATE grant', async () => {
    const tables = { semaphores: `tls_semaphores_${run}`, permits: `tls_permits_${run}` };
    const user = `sem_${run}`;
    const account = `'${user}'@'127.0.0.1'`;
    // The administrator's migration, from the DDL helper.
    for (const statement of semaphoreTablesDdl(sqlDialectFor('mariadb'), tables.semaphores, tables.permits)) await root.query(statement);
    await root.query(`CREATE USER ${account} IDENTIFIED BY '${user}-pw' REQUIRE SSL`);
    try {
      for (const grant of [...lockTableGrants(MARIADB_TLS.database, account), ...semaphoreTableGrants(MARIADB_TLS.database, account, tables)]) await root.query(grant);
      const options = mariadbTlsOptions(user, `${user}-pw`);
      const service = locks(new RowLockStrategy({ connection: options, semaphoreTables: tables }));
      const contender = locks(new RowLockStrategy({ connection: options, semaphoreTables: tables }));
      await expectPermitsThroughUser(service, contender, `tls:${run}:semaphore`);
    } finally {
      await root.query(`DROP USER ${account}`);
      await root.query(`DROP TABLE ${tables.semaphores}, ${tables.permits}`);
    }
  });

  it.each([
    { strategy: 'row', grants: ['GRANT SELECT, INSERT ON `locktest`.`distributed_lock_leases`'], table: 'distributed_lock_leases' },
    { strategy: 'pessimistic', grants: ['GRANT SELECT, INSERT, UPDATE ON `locktest`.`distributed_lock_rows`'], table: 'distributed_lock_fences' },
  ])('a user short of a grant gets LockPermissionDeniedError from the $strategy strategy, naming the GRANT', async ({ strategy, grants, table }) => {
    const user = `short_${randomUUID().slice(0, 8)}`;
    const account = `'${user}'@'127.0.0.1'`;
    await root.query(`CREATE USER ${account} IDENTIFIED BY '${user}-pw' REQUIRE SSL`);
    try {
      for (const grant of grants) await root.query(`${grant} TO ${account}`);
      const options = mariadbTlsOptions(user, `${user}-pw`);
      const service = locks(strategy === 'row' ? new RowLockStrategy({ connection: options }) : new PessimisticLockStrategy({ connection: options }));
      const error = await service.acquire(`tls:${run}:${user}`, { waitTimeout: 1_000 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockPermissionDeniedError);
      expect((error as LockPermissionDeniedError).grant).toContain(`GRANT SELECT, INSERT, UPDATE ON <database>.\`${table}\` TO <user>;`);
    } finally {
      await root.query(`DROP USER ${account}`);
    }
  });
});
