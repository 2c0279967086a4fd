import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { LockBackendUnavailableError, LockManager, LockService, type LockLostError } from '@app/distributed-lock';
import { AdvisoryLockStrategy, getLockName, lockTransaction, postgresAdvisoryKey } from '@app/distributed-lock/strategies/database';
import { StockRow as Stock } from '../support/stock-row.entity';
import { abortedWithin } from '../support/aborted-within';
import { expectCommitsWithRelease } from '../support/lock-transaction-check';
import { expectAbortedWaitEnded } from '../support/aborted-wait';
import { initializeDataSource } from '../support/initialize-data-source';

const run = randomUUID().slice(0, 8);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Server {
  readonly name: string;
  options(): DataSourceOptions;
  /**
   * How many connections wait inside the server for the lock of `key` right now (that key only: the other
   * contract files run advisory locks of their own on the same server at the same time).
   */
  waitingOn(dataSource: DataSource, key: string): Promise<number>;
  /** Ends a connection by its server id, as an operator would. */
  kill(id: number): string;
  /** The server id of the connection holding the key's lock, by the server's own books. */
  holderOf(dataSource: DataSource, key: string): Promise<number | undefined>;
}

/** A bigint advisory key is classid (high 32 bits) and objid (low 32 bits), objsubid 1, in pg_locks. */
const PG_ADVISORY_KEY = "locktype = 'advisory' AND classid = $1::oid AND objid = $2::oid AND objsubid = 1";
function pgAdvisoryKeyParts(key: string): [string, string] {
  const bits = BigInt.asUintN(64, BigInt(postgresAdvisoryKey(key)));
  return [String(bits >> 32n), String(bits & 0xffffffffn)];
}

const SERVERS: readonly Server[] = [
  {
    name: 'PostgreSQL',
    options: () => ({ type: 'postgres', url: process.env.LOCK_TEST_POSTGRES_URL, entities: [Stock], synchronize: true, poolSize: 12 }),
    waitingOn: async (dataSource, key) => {
      const rows = (await dataSource.query(`SELECT count(*) AS n FROM pg_locks WHERE ${PG_ADVISORY_KEY} AND NOT granted`, pgAdvisoryKeyParts(key))) as Array<{ n: string }>;
      return Number(rows[0]?.n);
    },
    kill: (id) => `SELECT pg_terminate_backend(${id})`,
    holderOf: async (dataSource, key) => {
      const rows = (await dataSource.query(`SELECT pid FROM pg_locks WHERE ${PG_ADVISORY_KEY} AND granted`, pgAdvisoryKeyParts(key))) as Array<{ pid: number }>;
      return rows[0]?.pid;
    },
  },
  {
    name: 'MariaDB',
    options: () => ({ type: 'mysql', url: process.env.LOCK_TEST_MYSQL_URL, entities: [Stock], synchronize: true, poolSize: 12 }),
    waitingOn: async (dataSource, key) => {
      // A session waiting in GET_LOCK shows the statement, which names the lock.
      const rows = (await dataSource.query("SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE STATE = 'User lock' AND INFO LIKE CONCAT('%', ?, '%')", [getLockName(key)])) as Array<{ n: string | number }>;
      return Number(rows[0]?.n);
    },
    kill: (id) => `KILL ${id}`,
    holderOf: async (dataSource, key) => {
      const rows = (await dataSource.query('SELECT IS_USED_LOCK(?) AS id', [getLockName(key)])) as Array<{ id: number | null }>;
      return rows[0]?.id ?? undefined;
    },
  },
];

describe.each(SERVERS)('advisory strategy on $name', (server) => {
  let dataSource: DataSource;
  const managers: LockManager[] = [];
  const service = (options: Partial<ConstructorParameters<typeof AdvisoryLockStrategy>[0]> = {}): LockService => {
    const manager = new LockManager(new AdvisoryLockStrategy({ dataSource, ...options }));
    managers.push(manager);
    return new LockService(manager);
  };
  /** Until `n` wait for `key` inside the server, bounded; resolves how many did. */
  const waitingOn = async (key: string, n: number): Promise<number> => {
    let now = await server.waitingOn(dataSource, key);
    for (const deadline = Date.now() + 10_000; now < n && Date.now() < deadline; now = await server.waitingOn(dataSource, key)) await sleep(20);
    return now;
  };

  beforeAll(async () => {
    dataSource = await initializeDataSource(server.options());
  });

  afterAll(async () => {
    await Promise.all(managers.map((manager) => manager.close()));
    await dataSource?.destroy();
  });

  it('waits inside the server, without polling, and the next in line gets the lock with a higher token', async () => {
    const [a, b] = [service(), service()];
    const key = `adv:${run}:wait`;
    const holder = await a.acquire(key);
    expect(await server.waitingOn(dataSource, key)).toBe(0);
    const waiter = b.acquire(key, { waitTimeout: 10_000 });
    expect(await waitingOn(key, 1)).toBe(1);
    await holder.release();
    const next = await waiter;
    expect(next.fencingToken).toBeGreaterThan(holder.fencingToken as number);
    await next.release();
  });

  it('takes keys longer than 64 characters (GET_LOCK names are hashed), and two of them are two locks', async () => {
    const locks = service();
    const long = `adv:${run}:${'x'.repeat(200)}`;
    const first = await locks.acquire(`${long}:1`);
    const second = await locks.acquire(`${long}:2`, { waitTimeout: 2_000 });
    expect(await locks.tryAcquire(`${long}:1`, { reentrant: false })).toBeNull();
    await Promise.all([first.release(), second.release()]);
  });

  it('reports a holder whose connection is killed at once (its lock is freed by the server), and lets the next one in', async () => {
    const [a, b] = [service(), service()];
    const key = `adv:${run}:killed`;
    const holder = await a.acquire(key, { ttl: 30_000 });
    const id = await server.holderOf(dataSource, key);
    expect(id).toBeDefined();
    const killedAt = Date.now();
    await dataSource.query(server.kill(id as number));
    const reason = (await abortedWithin(holder.signal, 5_000)) as LockLostError;
    expect(reason.reason).toBe('session-ended');
    expect(Date.now() - killedAt).toBeLessThan(2_000);
    const next = await b.acquire(key, { waitTimeout: 5_000 });
    expect(next.fencingToken).toBeGreaterThan(holder.fencingToken as number);
    await next.release();
    expect(await holder.release()).toBe(false);
  });

  it('never pins more connections than allowed, and says which option to change', async () => {
    const locks = service({ maxHeldConnections: 2, name: 'advisory-small' });
    const held = await Promise.all([0, 1].map((i) => locks.acquire(`adv:${run}:slot:${i}`)));
    expect(await locks.tryAcquire(`adv:${run}:slot:2`)).toBeNull();
    const error = await locks.acquire(`adv:${run}:slot:2`, { waitTimeout: 300 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockBackendUnavailableError);
    expect((error as Error).message).toMatch(/maxHeldConnections/);
    await Promise.all(held.map((lock) => lock.release()));
  });

  it('with scope "transaction", commits the writes made through the lock with the release and rolls them back on failure', async () => {
    const locks = service({ scope: 'transaction', name: 'advisory-xact' });
    const sku = await expectCommitsWithRelease(dataSource, locks, 'adv');
    // The lock went with the transaction: free again.
    const again = await locks.tryAcquire(`stock:${sku}`);
    expect(again).not.toBeNull();
    await again?.release();
  });

  it('leaves no lock on a pooled connection after a wait that timed out or was aborted', async () => {
    const [a, b] = [service(), service()];
    const key = `adv:${run}:timeouts`;
    const holder = await a.acquire(key);
    await expect(b.acquire(key, { waitTimeout: 200 })).rejects.toMatchObject({ name: 'LockAcquireTimeoutError' });
    const controller = new AbortController();
    const aborted = b.acquire(key, { waitTimeout: 10_000, signal: controller.signal }).catch((e: unknown) => e);
    await sleep(100);
    controller.abort();
    expect(await aborted).toMatchObject({ name: 'LockAcquireAbortedError' });
    await holder.release();
    // Every connection of the pool is free of the lock: each of them can take it at once.
    const takers = [service(), service(), service()];
    for (const taker of takers) {
      const lock = await taker.acquire(key, { waitTimeout: 2_000 });
      await lock.release();
    }
  });

  it('ends the wait on the server before an aborted acquire() rejects, also when the cancel reached the server before the wait did', async () => {
    const waiterDataSource = await initializeDataSource(server.options());
    try {
      await expectAbortedWaitEnded({
        holder: service(),
        strategy: new AdvisoryLockStrategy({ dataSource: waiterDataSource }),
        waiterDataSource,
        waitingStatement: server.name === 'PostgreSQL' ? /pg_advisory_lock\(/ : /GET_LOCK\(/,
        key: `adv:${run}:cancel-first`,
      });
    } finally {
      await waiterDataSource.destroy();
    }
  }, 15_000);
});
