import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { LockAcquireAbortedError, LockAcquireTimeoutError, LockManager, LockService } from '@app/distributed-lock';
import { AdvisoryLockStrategy, PessimisticLockStrategy } from '@app/distributed-lock/strategies/database';
import { RepeatedCancel } from '@app/distributed-lock/strategies/database/repeated-cancel';
import { connectionIdOf } from '@app/distributed-lock/strategies/database/typeorm-internals';
import { StockRow as Stock } from '../support/stock-row.entity';
import { watchStatements } from '../support/watched-statements';

const run = randomUUID().slice(0, 8);
const mysql = (poolSize = 4): DataSourceOptions => ({ type: 'mysql', url: process.env.LOCK_TEST_MYSQL_URL, entities: [Stock], synchronize: true, poolSize });
const postgres = (poolSize = 4): DataSourceOptions => ({ type: 'postgres', url: process.env.LOCK_TEST_POSTGRES_URL, entities: [Stock], synchronize: true, poolSize });
const outcomeOf = <T>(promise: Promise<T>): Promise<T | unknown> => promise.catch((error: unknown) => error);

/** Resolves once `done()` holds, checked every 5 ms; throws after 5 s. */
async function until(done: () => boolean, what: string): Promise<void> {
  for (const deadline = Date.now() + 5_000; !done(); await sleep(5)) {
    if (Date.now() > deadline) throw new Error(`not within 5 s: ${what}`);
  }
}

// The cancel that bounds a database wait (KILL QUERY, pg_cancel_backend) takes a connection of the same pool
// as the waits it stops: the pessimistic and advisory strategies pin one connection per lock and per wait.
describe('the cancel of a wait, on a pool whose every connection is pinned by waits (MariaDB)', () => {
  const dataSources: DataSource[] = [];
  const managers: LockManager[] = [];
  const open = async (options: DataSourceOptions): Promise<DataSource> => {
    const dataSource = await new DataSource(options).initialize();
    dataSources.push(dataSource);
    return dataSource;
  };
  const service = (manager: LockManager): LockService => {
    managers.push(manager);
    return new LockService(manager);
  };
  afterAll(async () => {
    await Promise.all(managers.map((manager) => manager.close().catch(() => undefined)));
    await Promise.all(dataSources.map((dataSource) => dataSource.destroy().catch(() => undefined)));
  });

  // Found by review: the cancel waited for a pool connection, the waits it was for ended on the server by
  // their own bound, and each then waited for its cancel before giving its connection back: none ever came.
  // Two strategies sharing one pool, each below the pool size (as the docs ask), reach it: 8 + 8 pinned
  // connections by default, on TypeORM's default pool of 10.
  it('ends both waits and gives the connections back, where the cancels wait for a connection that only the waits can free', async () => {
    const shared = await open(mysql(2));
    const holders = await open(mysql());
    const pessimistic = service(new LockManager(new PessimisticLockStrategy({ dataSource: shared, maxHeldConnections: 1 })));
    const advisory = service(new LockManager(new AdvisoryLockStrategy({ dataSource: shared, maxHeldConnections: 1 })));
    const rowKey = `cancel:${run}:row`;
    const advisoryKey = `cancel:${run}:advisory`;
    const rowHolder = await service(new LockManager(new PessimisticLockStrategy({ dataSource: holders }))).acquire(rowKey, { ttl: 30_000 });
    const advisoryHolder = await service(new LockManager(new AdvisoryLockStrategy({ dataSource: holders }))).acquire(advisoryKey, { ttl: 30_000 });

    // Both connections of the shared pool wait: one until its deadline (then cancelled), one until aborted.
    const waits = watchStatements(shared, { matches: (sql) => /FOR UPDATE WAIT|GET_LOCK\(/.test(sql) });
    const controller = new AbortController();
    const timedOut = outcomeOf(pessimistic.acquire(rowKey, { ttl: 30_000, waitTimeout: 1_200 }));
    const aborted = outcomeOf(advisory.acquire(advisoryKey, { ttl: 30_000, waitTimeout: 2_000, signal: controller.signal }));
    await until(() => waits.length === 2, 'both waits sent');
    // Time for both to start waiting on the server before the abort.
    await sleep(100);
    controller.abort(new Error('cancelled by the caller'));
    expect(await timedOut).toBeInstanceOf(LockAcquireTimeoutError);
    expect(await aborted).toBeInstanceOf(LockAcquireAbortedError);

    await Promise.all([rowHolder.release(), advisoryHolder.release()]);
    // The waits' connections came back: each strategy takes its lock (a slot, then a connection) again. One
    // after the other: the pessimistic lock draws its token on a second connection.
    for (const [locks, key] of [[pessimistic, rowKey], [advisory, advisoryKey]] as const) {
      const outcome = await outcomeOf(locks.acquire(key, { ttl: 30_000, waitTimeout: 3_000 }));
      expect(outcome instanceof Error ? outcome.name : 'held').toBe('held');
      await (outcome as { release(): Promise<boolean> }).release();
    }
  }, 20_000);
});

describe.each([
  { name: 'MariaDB', options: mysql, cancel: (id: number) => `KILL QUERY ${id}` },
  { name: 'PostgreSQL', options: postgres, cancel: (id: number) => `SELECT pg_cancel_backend(${id})` },
])('a repeated cancel on $name', ({ options, cancel }) => {
  let dataSource: DataSource;
  beforeAll(async () => {
    dataSource = await new DataSource(options()).initialize();
  });
  afterAll(async () => {
    await dataSource?.destroy();
  });

  it('is sent once for a connection the server does not know: it could only ever land on someone else', async () => {
    const cancels = watchStatements(dataSource, { matches: (sql) => sql === cancel(2_000_000_000) });
    const repeated = new RepeatedCancel(dataSource, cancel(2_000_000_000), 10_000);
    repeated.start();
    // Several resend pauses (20, 40, 80, 160 ms).
    await sleep(600);
    await repeated.stop();
    expect(cancels).toHaveLength(1);
  });

  it('stops once the wait\'s bound on the server (and 2 s for a statement on its way) has passed, also when never told the wait is over', async () => {
    // A connection that waits for nothing: each cancel lands on nothing, as on a wait that has not started.
    const idle = dataSource.createQueryRunner();
    await idle.connect();
    try {
      const statement = cancel(connectionIdOf(idle) as number);
      const cancels = watchStatements(dataSource, { matches: (sql) => sql === statement });
      const repeated = new RepeatedCancel(dataSource, statement, 0);
      repeated.start();
      await sleep(3_000);
      const sent = cancels.length;
      // Sent again while the bound lasts (at 0, 20, 60, 140 ms and so on), then no more.
      expect(sent).toBeGreaterThanOrEqual(2);
      await sleep(1_500);
      expect(cancels).toHaveLength(sent);
      await repeated.stop();
      // The connection was never harmed: a cancel that landed on nothing is forgotten at its next statement.
      expect(await idle.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    } finally {
      await idle.release();
    }
  }, 15_000);

  it('once told the wait is over, waits for a cancel on its way to be answered, so that it cannot land on the connection\'s next statement', async () => {
    const idle = dataSource.createQueryRunner();
    await idle.connect();
    try {
      const statement = cancel(connectionIdOf(idle) as number);
      const cancels = watchStatements(dataSource, { matches: (sql) => sql === statement, hold: 300 });
      const repeated = new RepeatedCancel(dataSource, statement, 10_000);
      repeated.start();
      await until(() => cancels.length > 0, 'the cancel sent');
      await repeated.stop();
      expect(cancels.map(({ settledAt }) => settledAt !== undefined)).toEqual([true]);
      expect(await idle.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    } finally {
      await idle.release();
    }
  });
});
