import 'reflect-metadata';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { InvalidLockKeyError, LockManager, LockService } from '@app/distributed-lock';
import { PessimisticLockStrategy, RowLockStrategy } from '@app/distributed-lock/strategies/database';
import { SQL_DIALECTS, withServerFeatures } from '@app/distributed-lock/strategies/database/sql-dialect';
import { initializeDataSource } from '../support/initialize-data-source';

const run = randomUUID().slice(0, 8);
const mysql = (): DataSourceOptions => ({ type: 'mysql', url: process.env.LOCK_TEST_MYSQL_URL, poolSize: 4 });

/** Loads one zone into the server's time zone tables (once), as `mariadb-tzinfo-to-sql` does for an operator. */
async function loadTimeZone(dataSource: DataSource, zone: string): Promise<void> {
  const known = (await dataSource.query('SELECT COUNT(*) AS n FROM mysql.time_zone_name WHERE Name = ?', [zone])) as Array<{ n: string | number }>;
  if (Number(known[0]?.n) > 0) return;
  const url = new URL(process.env.LOCK_TEST_MYSQL_URL as string);
  const sql = spawnSync('mariadb-tzinfo-to-sql', [`/usr/share/zoneinfo/${zone}`, zone], { encoding: 'utf8' });
  if (sql.status !== 0) throw new Error(`mariadb-tzinfo-to-sql failed: ${sql.stderr}`);
  const load = spawnSync('mariadb', ['-h', url.hostname, '-P', url.port, '-u', decodeURIComponent(url.username), `-p${decodeURIComponent(url.password)}`, 'mysql'], {
    input: sql.stdout,
    encoding: 'utf8',
  });
  if (load.status !== 0) throw new Error(`loading time zone ${zone} failed: ${load.stderr}`);
}

describe('lock tables on MariaDB', () => {
  let dataSource: DataSource;
  const managers: LockManager[] = [];
  const serviceOn = (strategy: RowLockStrategy | PessimisticLockStrategy): LockService => {
    const manager = new LockManager(strategy);
    managers.push(manager);
    return new LockService(manager);
  };

  beforeAll(async () => {
    dataSource = await initializeDataSource(mysql());
  });

  afterAll(async () => {
    await Promise.all(managers.map((manager) => manager.close()));
    await dataSource?.destroy();
  });

  it('reads the lease clock in UTC: the hour a daylight-saving change repeats does not move leases', async () => {
    await loadTimeZone(dataSource, 'Europe/Berlin');
    const dialect = await withServerFeatures(dataSource, SQL_DIALECTS.mysql);
    // 2026-10-25 02:30 in Berlin happens twice; this is the second time (CET), 01:30 UTC.
    const epochSeconds = Date.UTC(2026, 9, 25, 1, 30) / 1000;
    const runner = dataSource.createQueryRunner();
    try {
      await runner.query("SET time_zone = 'Europe/Berlin'");
      await runner.query(`SET timestamp = ${epochSeconds}`);
      const [row] = (await runner.query(`SELECT ${dialect.nowMs} AS ms, ${dialect.nowUs} AS us, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) AS localMs`)) as Array<{ ms: string; us: string; localMs: string }>;
      expect(Number(row.ms)).toBe(epochSeconds * 1000);
      expect(Number(row.us)).toBe(epochSeconds * 1_000_000);
      // The expression used before: converting local time back picks the first 02:30, an hour early.
      expect(Number(row.localMs)).not.toBe(epochSeconds * 1000);
    } finally {
      await runner.query('SET timestamp = DEFAULT').catch(() => undefined);
      await runner.release();
    }
  });

  it('on a lock table of an earlier version (padding collation), refuses the keys it would confuse and names the migration; after it, "k" and "k " are two locks', async () => {
    const table = `old_leases_${run}`;
    await dataSource.query(`CREATE TABLE ${table} (
      lock_key VARCHAR(255) NOT NULL PRIMARY KEY, owner VARCHAR(255) NOT NULL, hold_count INT NOT NULL DEFAULT 1,
      fencing_token BIGINT NOT NULL, expires_at BIGINT NOT NULL, acquired_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`);
    // The strategy never alters the table itself: an ALTER waits for every open transaction on it and
    // blocks every lock behind it meanwhile (a rolling upgrade with old holders).
    const locks = serviceOn(new RowLockStrategy({ dataSource, table }));
    const plain = await locks.acquire('k');
    const error = await locks.tryAcquire('k ').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidLockKeyError);
    const migration = /(ALTER TABLE `old_leases_\w+` MODIFY lock_key [^\n]+)$/.exec((error as Error).message.replace(/ \(got .*\)$/, ''))?.[1];
    expect(migration).toMatch(/COLLATE utf8mb4_nopad_bin NOT NULL$/);
    await plain.release();
    await dataSource.query(migration as string);
    const fresh = serviceOn(new RowLockStrategy({ dataSource, table }));
    const k = await fresh.acquire('k');
    const spaced = await fresh.tryAcquire('k ');
    expect(spaced).not.toBeNull();
    await spaced?.release();
    await k.release();
    await dataSource.query(`DROP TABLE ${table}`);
  });
});

/**
 * The row strategy's local hand-over, on both databases: contenders of one process wait in one line and a
 * release hands the row to the next one in one UPDATE, with a new owner and a higher fencing token.
 */
describe.each([
  { name: 'MariaDB', options: (): DataSourceOptions => mysql() },
  { name: 'SQLite', options: (): DataSourceOptions => ({ type: 'better-sqlite3', database: `/tmp/lock-handover-${run}.sqlite` }) },
  { name: 'PostgreSQL', options: (): DataSourceOptions => ({ type: 'postgres', url: process.env.LOCK_TEST_POSTGRES_URL, poolSize: 8 }) },
])('row strategy hand-over on $name', ({ name, options }) => {
  let dataSource: DataSource;
  const managers: LockManager[] = [];
  const instance = (localHandover?: { passes: number; windowMs: number }): LockService => {
    const manager = new LockManager(new RowLockStrategy({ dataSource, table: 'handover_leases', localHandover }));
    managers.push(manager);
    return new LockService(manager);
  };
  const row = async (key: string): Promise<{ owner: string; token: number }> => {
    const [found] = (await dataSource.query(`SELECT owner, fencing_token AS token FROM handover_leases WHERE lock_key = ${name === 'PostgreSQL' ? '$1' : '?'}`, [key])) as Array<{ owner: string; token: string | number }>;
    return { owner: found.owner, token: Number(found.token) };
  };

  beforeAll(async () => {
    dataSource = await initializeDataSource(options());
  });

  afterAll(async () => {
    await Promise.all(managers.map((manager) => manager.close()));
    await dataSource?.destroy();
  });

  it('hands the row to the next contender of the process: its owner in the table, a higher token', async () => {
    const locks = instance();
    const key = `handover:${run}`;
    const first = await locks.acquire(key);
    const next = locks.acquire(key, { waitTimeout: 5_000, reentrant: false });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const before = await row(key);
    expect(before.owner).toBe(first.owner);
    expect(await first.release()).toBe(true);
    const second = await next;
    const after = await row(key);
    expect(after.owner).toBe(second.owner);
    expect(second.fencingToken).toBe(after.token);
    expect(after.token).toBeGreaterThan(before.token);
    expect(await second.release()).toBe(true);
    expect((await row(key)).owner).toBe('');
  });

  it('does not hand the row to the contender whose own try is on its way: it is held once, and its release frees it', async () => {
    // Found by the contract's storm of short waits (1 run in 3 to 20): a contender outside the line (a
    // tryAcquire) took the row while the first of the line was asking for it, and its release handed the row
    // to that contender, whose try then re-entered its own row. Two holds of one owner, one given back: the
    // row stayed taken after its release, for its whole lease. Here each step is held until the one before it
    // is done: the first of the line's try waits before it reaches the database.
    // A long barging window: the tryAcquire may take the free row ahead of the waiter's place in the queue.
    const strategy = new RowLockStrategy({ dataSource, table: 'handover_leases', bargeWindowMs: 60_000 });
    const manager = new LockManager(strategy);
    managers.push(manager);
    const locks = new LockService(manager);
    const elsewhere = instance();
    const key = `handover-asking:${run}`;
    let askingOwner = '';
    let trapNextTry: ((owner: string) => Promise<void>) | undefined;
    let tryGoesOn = (): void => undefined;
    let passedOn = (): void => undefined;
    const passed = new Promise<void>((resolve) => (passedOn = resolve));
    const tryAcquire = strategy.tryAcquire.bind(strategy);
    strategy.tryAcquire = async (request) => {
      const trap = trapNextTry;
      trapNextTry = undefined;
      if (trap) await trap(request.owner);
      return tryAcquire(request);
    };
    // The second hold of the waiter (before the fix) went back in the background; held here until the
    // holder has passed the row on, so that the pass finds both holds whatever the pool's order.
    const release = strategy.release.bind(strategy);
    strategy.release = async (lease) => {
      if (lease.owner === askingOwner) await Promise.race([passed, new Promise((resolve) => setTimeout(resolve, 2_000))]);
      return release(lease);
    };
    const transfer = strategy.transfer.bind(strategy);
    strategy.transfer = async (lease, next) => {
      try {
        return await transfer(lease, next);
      } finally {
        if (lease.owner === askingOwner) passedOn();
      }
    };

    const first = await elsewhere.acquire(key);
    const asking = locks.acquire(key, { waitTimeout: 5_000 });
    const behind = locks.acquire(key, { waitTimeout: 5_000 });
    // Awaited at the end; a failure before that leaves it to the close, which ends it.
    behind.catch(() => undefined);
    // The first of the line polls the held row; its next try is held here, before the database.
    const held = new Promise<void>((resolve) => (tryGoesOn = resolve));
    askingOwner = await new Promise<string>((resolve) => {
      trapNextTry = (owner) => {
        resolve(owner);
        return held;
      };
    });
    expect(await first.release()).toBe(true);
    // Taken outside the line (no wait), released while that try is still out.
    const barging = await locks.tryAcquire(key);
    expect(barging).not.toBeNull();
    expect(await barging?.release()).toBe(true);
    tryGoesOn();

    const got = await asking;
    expect(got.owner).toBe(askingOwner);
    expect(await got.release()).toBe(true);
    const next = await behind;
    expect((await row(key)).owner).toBe(next.owner);
    expect(await next.release()).toBe(true);
    expect((await row(key)).owner).toBe('');
  });

  it('gives the row back after its pass limit, so that another instance gets its turn', async () => {
    const hot = instance({ passes: 2, windowMs: 60_000 });
    const other = instance();
    const key = `handover-limit:${run}`;
    let stop = false;
    const tokens = new Set<number>();
    const loops = [0, 1, 2].map(async () => {
      while (!stop) await hot.withLock(key, (lock) => void tokens.add(lock.fencingToken ?? 0), { waitTimeout: 10_000, reentrant: false });
    });
    for (let waited = 0; tokens.size < 6 && waited < 10_000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
    try {
      // Three contenders passing the row around forever: without the limit the other instance would wait forever.
      const otherLock = await other.acquire(key, { waitTimeout: 10_000 });
      await otherLock.release();
    } finally {
      stop = true;
      await Promise.all(loops);
    }
  });
});
