// query and breakLock on the database strategies: bad input is refused with a typed error before any server
// is touched (the strategies point at a port where nothing listens: touching it would fail with a connection
// error, not a typed one); the combination without query refuses; exact answers for transaction scope,
// fastPaths: false and re-entrant holds; PostgreSQL's advisory holders shown by their connection where no
// holder row is written (transaction scope, holders: false), and broken by it.
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { InvalidLockKeyError, InvalidLockOptionsError, LockLostError, LockManager, LockService, LockTableMismatchError, LockTableMissingError } from '@app/distributed-lock';
import { AdvisoryLockStrategy, advisoryHoldersDdl, getLockName, PessimisticLockStrategy, postgresAdvisoryKey, sqlDialectFor } from '@app/distributed-lock/strategies/database';

const run = randomUUID().slice(0, 8);
const deadPg = { type: 'postgres' as const, url: 'postgres://postgres@127.0.0.1:1/locktest', poolSize: 2, connectTimeoutMS: 500 };
const deadMy = { type: 'mysql' as const, url: 'mysql://root:x@127.0.0.1:1/locktest', poolSize: 2, connectTimeout: 500 };
const pgOptions = { type: 'postgres' as const, url: process.env.LOCK_TEST_POSTGRES_URL, poolSize: 3 };
const myOptions = { type: 'mysql' as const, url: process.env.LOCK_TEST_MYSQL_URL, poolSize: 3 };

describe('query and breakLock on the database strategies: input, refusals, settings', () => {
  const services = [
    ['pessimistic PG', () => new PessimisticLockStrategy({ connection: deadPg, name: 'a-pp' })],
    ['advisory MariaDB', () => new AdvisoryLockStrategy({ connection: deadMy, name: 'a-am' })],
    ['advisory PG', () => new AdvisoryLockStrategy({ connection: deadPg, name: 'a-ap' })],
  ] as const;
  it.each(services)('%s: bad key / no reason refused typed, before the server', async (_n, make) => {
    const manager = new LockManager(make());
    const s = new LockService(manager);
    try {
      for (const bad of ['', 'x'.repeat(256)]) {
        await expect(s.query(bad)).rejects.toBeInstanceOf(InvalidLockKeyError);
        await expect(s.breakLock(bad, { reason: 'r' })).rejects.toBeInstanceOf(InvalidLockKeyError);
      }
      await expect(s.breakLock('k', { reason: '' })).rejects.toBeInstanceOf(InvalidLockOptionsError);
      await expect(s.breakLock('k', {} as { reason: string })).rejects.toBeInstanceOf(InvalidLockOptionsError);
      await expect(s.breakLock('k', undefined as unknown as { reason: string })).rejects.toBeInstanceOf(InvalidLockOptionsError);
      await expect(s.breakLock('k', { reason: 42 as unknown as string })).rejects.toBeInstanceOf(InvalidLockOptionsError);
    } finally {
      await manager.close();
    }
  }, 20_000);

  it.each([
    ['pessimistic MariaDB', () => new PessimisticLockStrategy({ connection: deadMy, name: 'a-pm' })],
    ['pessimistic MariaDB holders: false', () => new PessimisticLockStrategy({ connection: deadMy, name: 'a-pm-off', holders: false })],
  ] as const)('%s refuses query and breakLock with InvalidLockOptionsError', async (_n, make) => {
    const manager = new LockManager(make());
    const s = new LockService(manager);
    try {
      await expect(s.query('k')).rejects.toBeInstanceOf(InvalidLockOptionsError);
      await expect(s.breakLock('k', { reason: 'r' })).rejects.toBeInstanceOf(InvalidLockOptionsError);
    } finally {
      await manager.close();
    }
  }, 20_000);

  it.each([
    ['advisory MariaDB transaction scope', () => new AdvisoryLockStrategy({ connection: { type: 'mysql', url: process.env.LOCK_TEST_MYSQL_URL, poolSize: 3 }, scope: 'transaction', name: 'a-tx' })],
    ['advisory MariaDB fastPaths false', () => new AdvisoryLockStrategy({ connection: { type: 'mysql', url: process.env.LOCK_TEST_MYSQL_URL, poolSize: 3 }, fastPaths: false, name: 'a-fp' })],
    ['advisory PG fastPaths false', () => new AdvisoryLockStrategy({ connection: { type: 'postgres', url: process.env.LOCK_TEST_POSTGRES_URL, poolSize: 3 }, fastPaths: false, holders: true, name: 'a-pg-fp' })],
    ['advisory PG holders in a table of its own', () => new AdvisoryLockStrategy({ connection: { type: 'postgres', url: process.env.LOCK_TEST_POSTGRES_URL, poolSize: 3 }, holders: 'adv_holders_custom', name: 'a-pg-ht' })],
    ['pessimistic PG fastPaths false', () => new PessimisticLockStrategy({ connection: { type: 'postgres', url: process.env.LOCK_TEST_POSTGRES_URL, poolSize: 3 }, fastPaths: false, name: 'p-fp' })],
    ['pessimistic MariaDB holders', () => new PessimisticLockStrategy({ connection: { type: 'mysql', url: process.env.LOCK_TEST_MYSQL_URL, poolSize: 3 }, holders: true, name: 'p-my-h' })],
    ['pessimistic MariaDB holders fastPaths false', () => new PessimisticLockStrategy({ connection: { type: 'mysql', url: process.env.LOCK_TEST_MYSQL_URL, poolSize: 3 }, holders: true, fastPaths: false, name: 'p-my-h-fp' })],
  ] as const)('%s: names the exact holder (also re-entrant), grantedAt in the call, and [] after release', async (_n, make) => {
    const manager = new LockManager(make());
    const s = new LockService(manager);
    const observerManager = new LockManager(make());
    const o = new LockService(observerManager);
    try {
      const k = `adv-in:${run}:${_n}`;
      const before = Date.now();
      const lock = await s.acquire(k, { ttl: 10_000 });
      const after = Date.now();
      const inner = await s.acquire(k, { ttl: 10_000, waitTimeout: 1_000 }).catch((e: unknown) => e);
      const queriedAt = Date.now();
      const info = await o.query(k);
      // The grant time crosses the query's round trip: off by half of it at most, and a millisecond of rounding.
      const slack = (Date.now() - queriedAt) / 2 + 1;
      expect(info.held).toHaveLength(1);
      expect(info.held[0].owner.id).toBe(lock.owner);
      expect(info.held[0].fencingToken).toBe(lock.fencingToken);
      expect(info.held[0].grantedAt).toBeGreaterThanOrEqual(before - slack);
      expect(info.held[0].grantedAt).toBeLessThanOrEqual(after + slack);
      if (inner && typeof (inner as { release?: unknown }).release === 'function') await (inner as { release(): Promise<boolean> }).release();
      expect((await o.query(k)).held.map((h) => h.owner.id)).toEqual([lock.owner]);
      await lock.release();
      expect((await o.query(k)).held).toEqual([]);
      expect(await o.breakLock(k, { reason: 'r' })).toEqual([]);
    } finally {
      await Promise.all([manager.close(), observerManager.close()]);
    }
  }, 20_000);

  it('refuses a bad holders option at construction, before any server is touched', () => {
    for (const holders of ['bad name', 'x'.repeat(64), 42, 'a;b', null, {}]) {
      expect(() => new AdvisoryLockStrategy({ connection: deadPg, holders: holders as unknown as string })).toThrow(InvalidLockOptionsError);
    }
    expect(() => new AdvisoryLockStrategy({ connection: deadMy, holders: 'h' })).toThrow(/PostgreSQL only/);
    expect(() => new AdvisoryLockStrategy({ connection: deadMy, holders: true })).toThrow(/PostgreSQL only/);
    expect(() => new AdvisoryLockStrategy({ connection: deadMy, holders: false })).not.toThrow();
    // A table and a sequence of one schema cannot share a name.
    expect(() => new AdvisoryLockStrategy({ connection: deadPg, holders: 'same_name', tokens: 'same_name' })).toThrow(/token sequence/);
    expect(() => new AdvisoryLockStrategy({ connection: deadPg, holders: true, tokens: 'distributed_lock_advisory_holders' })).toThrow(InvalidLockOptionsError);
    expect(advisoryHoldersDdl(sqlDialectFor('postgres'), false)).toEqual([]);
    // Its fencing table would be the default table's ("distributed_lock" + "_fences"): two locks, one token row.
    expect(() => new PessimisticLockStrategy({ connection: deadMy, table: 'distributed_lock' })).toThrow(/distributed_lock_fences/);
    expect(() => new PessimisticLockStrategy({ connection: deadMy, table: 'DISTRIBUTED_LOCK' })).toThrow(InvalidLockOptionsError);
    for (const holders of ['true', 1, null, {}]) {
      expect(() => new PessimisticLockStrategy({ connection: deadMy, holders: holders as unknown as boolean })).toThrow(InvalidLockOptionsError);
    }
    // PostgreSQL names the holder of a row lock either way.
    expect(new PessimisticLockStrategy({ connection: deadPg, holders: true }).inspect).toBeDefined();
    expect(new PessimisticLockStrategy({ connection: deadMy, holders: true }).inspect).toBeDefined();
  });

  it('pessimistic MariaDB holders: a hold without a mark (an instance with holders off) is shown held, by no connection, and is not broken', async () => {
    const my = { type: 'mysql' as const, url: process.env.LOCK_TEST_MYSQL_URL, poolSize: 3 };
    const holderManager = new LockManager(new PessimisticLockStrategy({ connection: my, name: 'p-unmarked' }));
    const observerManager = new LockManager(new PessimisticLockStrategy({ connection: my, name: 'p-unmarked-o', holders: true }));
    const o = new LockService(observerManager);
    try {
      const k = `p-unmarked:${run}`;
      expect((await o.query(k)).held).toEqual([]);
      const lock = await new LockService(holderManager).acquire(k, { ttl: 10_000 });
      const held = (await o.query(k)).held;
      expect(held.map((h) => [h.owner.id, h.owner.host, h.owner.pid, h.fencingToken])).toEqual([['MySQL holder without a mark', null, null, null]]);
      expect(await o.breakLock(k, { reason: 'r' })).toEqual([]);
      expect(lock.signal.aborted).toBe(false);
      expect(await lock.release()).toBe(true);
      expect((await o.query(k)).held).toEqual([]);
    } finally {
      await Promise.all([holderManager.close(), observerManager.close()]);
    }
  }, 20_000);

  it('pessimistic MariaDB holders: an instance that names the default table names the default fencing table too, so each names the other\'s holds', async () => {
    const byDefault = new LockManager(new PessimisticLockStrategy({ connection: myOptions, name: 'p-default-table', holders: true }));
    const byName = new LockManager(new PessimisticLockStrategy({ connection: myOptions, name: 'p-named-table', holders: true, table: 'distributed_lock_rows' }));
    try {
      const k = `p-same-table:${run}`;
      for (const [holder, observer] of [[byDefault, byName], [byName, byDefault]] as const) {
        const lock = await new LockService(holder).acquire(k, { ttl: 10_000 });
        const held = (await new LockService(observer).query(k)).held;
        expect(held.map((h) => [h.owner.id, h.fencingToken])).toEqual([[lock.owner, lock.fencingToken]]);
        await lock.release();
      }
    } finally {
      await Promise.all([byDefault.close(), byName.close()]);
    }
  }, 20_000);

  it('pessimistic MariaDB holders: a mark some other connection keeps (a leak) names nobody, and breakLock ends neither it nor the holder', async () => {
    const admin = new DataSource(myOptions);
    await admin.initialize();
    const markHolder = admin.createQueryRunner();
    const holderManager = new LockManager(new PessimisticLockStrategy({ connection: myOptions, name: 'p-leak', holders: true }));
    const observerManager = new LockManager(new PessimisticLockStrategy({ connection: myOptions, name: 'p-leak-o', holders: true }));
    const o = new LockService(observerManager);
    try {
      const k = `p-leak:${run}`;
      await markHolder.connect();
      const [{ id }] = (await markHolder.query('SELECT CONNECTION_ID() AS id')) as Array<{ id: number }>;
      await markHolder.query('DO GET_LOCK(?, 0)', [getLockName(`\u0000row holder\u0000distributed_lock_rows\u0000${k}`)]);
      // The holder waits a moment for the mark, then holds unmarked.
      const lock = await new LockService(holderManager).acquire(k, { ttl: 10_000 });
      const held = (await o.query(k)).held;
      expect(held.map((h) => [h.owner.id, h.fencingToken])).toEqual([['MySQL holder without a mark', null]]);
      expect(await o.breakLock(k, { reason: 'r' })).toEqual([]);
      expect(lock.signal.aborted).toBe(false);
      // The connection that kept the mark was not killed.
      expect(await markHolder.query('SELECT CONNECTION_ID() AS id')).toEqual([{ id }]);
      expect(await lock.release()).toBe(true);
    } finally {
      await markHolder.release().catch(() => undefined);
      await Promise.all([holderManager.close(), observerManager.close(), admin.destroy()]);
    }
  }, 20_000);

  it('pessimistic MariaDB holders: a mark that another connection lets go a moment after the grant (an ending session lets its mark go last) is waited for, and the hold is named exactly', async () => {
    const admin = new DataSource(myOptions);
    await admin.initialize();
    const ending = admin.createQueryRunner();
    const holderManager = new LockManager(new PessimisticLockStrategy({ connection: myOptions, name: 'p-late-mark', holders: true }));
    const observerManager = new LockManager(new PessimisticLockStrategy({ connection: myOptions, name: 'p-late-mark-o', holders: true }));
    try {
      const k = `p-late-mark:${run}`;
      const marker = getLockName(`\u0000row holder\u0000distributed_lock_rows\u0000${k}`);
      await ending.connect();
      await ending.query('DO GET_LOCK(?, 0)', [marker]);
      const letGo = new Promise((resolve) => setTimeout(resolve, 200)).then(() => ending.query('DO RELEASE_LOCK(?)', [marker]));
      const lock = await new LockService(holderManager).acquire(k, { ttl: 10_000 });
      await letGo;
      const held = (await new LockService(observerManager).query(k)).held;
      expect(held.map((h) => [h.owner.id, h.fencingToken])).toEqual([[lock.owner, lock.fencingToken]]);
      await lock.release();
    } finally {
      await ending.release().catch(() => undefined);
      await Promise.all([holderManager.close(), observerManager.close(), admin.destroy()]);
    }
  }, 20_000);

  it.each([
    ['a section that failed (ROLLBACK)', 'failed'],
    ['a lock whose lease ran out (session ended)', 'lost'],
    ['a completed section (COMMIT)', 'completed'],
  ] as const)('pessimistic MariaDB holders: the mark goes with %s, so the next holder on another connection is named', async (_n, ending) => {
    const my = { type: 'mysql' as const, url: process.env.LOCK_TEST_MYSQL_URL, poolSize: 3 };
    const managers = [0, 1, 2].map((i) => new LockManager(new PessimisticLockStrategy({ connection: my, name: `p-mark-${i}`, holders: true })));
    const [first, next, o] = managers.map((m) => new LockService(m));
    try {
      const k = `p-mark:${run}:${ending}`;
      if (ending === 'failed') {
        await expect(first.withLock(k, async () => Promise.reject(new Error('section failed')))).rejects.toThrow('section failed');
      } else if (ending === 'lost') {
        const lock = await first.acquire(k, { ttl: 300, autoExtend: false });
        await new Promise((resolve) => lock.signal.addEventListener('abort', resolve));
        expect(await lock.release()).toBe(false);
      } else {
        await first.withLock(k, async () => undefined);
      }
      expect((await o.query(k)).held).toEqual([]);
      const lock = await next.acquire(k, { ttl: 10_000, waitTimeout: 5_000 });
      const [held] = (await o.query(k)).held;
      expect([held?.owner.id, held?.fencingToken]).toEqual([lock.owner, lock.fencingToken]);
      await lock.release();
    } finally {
      await Promise.all(managers.map((m) => m.close()));
    }
  }, 20_000);

  it.each([
    ['transaction scope with holders: true', { scope: 'transaction', holders: true }],
    ['the default (no holder rows)', {}],
  ] as const)('advisory PG, %s: shows the holder by its connection alone, and breakLock ends that connection', async (_n, options) => {
    const pg = { type: 'postgres' as const, url: process.env.LOCK_TEST_POSTGRES_URL, poolSize: 3 };
    const manager = new LockManager(new AdvisoryLockStrategy({ connection: pg, name: 'a-pg-conn', ...options }));
    const s = new LockService(manager);
    const observerManager = new LockManager(new AdvisoryLockStrategy({ connection: pg, name: 'a-pg-conn-o' }));
    const o = new LockService(observerManager);
    try {
      const k = `adv-conn:${run}:${_n}`;
      // The section runs until its signal says the lock is gone (5 s at most).
      const section = s.withLock(
        k,
        (lock) =>
          new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, 5_000);
            lock.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()));
          }),
        { ttl: 10_000 },
      ).catch((e: unknown) => e);
      await expect.poll(async () => (await o.query(k)).held.length, { timeout: 5_000 }).toBe(1);
      const [held] = (await o.query(k)).held;
      expect(held.owner.id).toMatch(/^PostgreSQL connection \d+$/);
      expect([held.owner.host, held.owner.pid, held.fencingToken, held.grantedAt, held.expiresAt]).toEqual([null, null, null, null, null]);
      const broken = await o.breakLock(k, { reason: 'stuck' });
      expect(broken.map((h) => h.owner.id)).toEqual([held.owner.id]);
      const error = await section;
      expect(error).toBeInstanceOf(LockLostError);
      expect((error as LockLostError).reason).toBe('session-ended');
      expect((await o.query(k)).held).toEqual([]);
    } finally {
      await Promise.all([manager.close(), observerManager.close()]);
    }
  }, 20_000);

  it.each([
    [
      'advisory PG, a holder table of another shape',
      'CREATE TABLE IF NOT EXISTS adv_holders_other_shape (lock_key TEXT PRIMARY KEY, owner TEXT)',
      (name: string) => new AdvisoryLockStrategy({ connection: pgOptions, name, holders: 'adv_holders_other_shape' }),
      ['adv_holders_other_shape'],
    ],
    [
      'pessimistic MariaDB, a fence table of another shape',
      'CREATE TABLE IF NOT EXISTS p_other_shape_fences (lock_key VARCHAR(255) PRIMARY KEY, fencing_token BIGINT NOT NULL)',
      (name: string) => new PessimisticLockStrategy({ connection: myOptions, name, table: 'p_other_shape' }),
      ['p_other_shape', 'p_other_shape_fences'],
    ],
  ] as const)('%s: the acquisition fails at once with LockTableMismatchError naming the column, and leaves the key free', async (_n, ddl, make, tables) => {
    const postgres = _n.startsWith('advisory');
    const admin = new DataSource(postgres ? pgOptions : myOptions);
    await admin.initialize();
    const manager = new LockManager(make('shape'));
    try {
      await admin.query(ddl);
      const k = `shape:${run}`;
      const error = await new LockService(manager).acquire(k, { waitTimeout: 60_000 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockTableMismatchError);
      expect((error as LockTableMismatchError).tables).toEqual(tables);
      expect((error as LockTableMismatchError).column).toMatch(/^\w+$/);
      // Nothing is left held: the key's lock is free at once.
      if (postgres) {
        const [row] = (await admin.query('SELECT pg_try_advisory_lock($1::bigint) AS free', [postgresAdvisoryKey(k)])) as Array<{ free: boolean }>;
        expect(row.free).toBe(true);
      } else {
        expect(await admin.query('SELECT lock_key FROM p_other_shape WHERE lock_key = ? FOR UPDATE NOWAIT', [k])).toHaveLength(1);
      }
    } finally {
      await manager.close();
      await admin.destroy();
    }
  }, 20_000);

  it('advisory PG without its holder table (ensureTable: false, no migration): the acquisition fails at once naming the table, and leaves the key free', async () => {
    const pg = { type: 'postgres' as const, url: process.env.LOCK_TEST_POSTGRES_URL, poolSize: 3 };
    const manager = new LockManager(new AdvisoryLockStrategy({ connection: pg, name: 'a-pg-missing', holders: 'adv_holders_never_made', ensureTable: false }));
    const other = new LockManager(new AdvisoryLockStrategy({ connection: pg, name: 'a-pg-other' }));
    try {
      const k = `adv-missing:${run}`;
      const error = await new LockService(manager).acquire(k, { waitTimeout: 60_000 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockTableMissingError);
      expect((error as Error).message).toContain('adv_holders_never_made');
      expect(await new LockService(other).tryAcquire(k).then((lock) => lock?.release())).toBe(true);
    } finally {
      await Promise.all([manager.close(), other.close()]);
    }
  }, 20_000);
});
