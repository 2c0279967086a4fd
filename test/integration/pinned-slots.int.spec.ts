import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { DataSource, EventSubscriber, type DataSourceOptions, type EntitySubscriberInterface } from 'typeorm';
import { InvalidLockOptionsError, LockBackendUnavailableError, type LockHandle, LockManager, LockService } from '@app/distributed-lock';
import { AdvisoryLockStrategy, PessimisticLockStrategy } from '@app/distributed-lock/strategies/database';
import { StockRow as Stock } from '../support/stock-row.entity';
import { initializeDataSource } from '../support/initialize-data-source';

const run = randomUUID().slice(0, 8);

/**
 * The connection slots of a strategy that pins a connection per lock (maxHeldConnections): a key nobody
 * holds that cannot be had for want of a slot is a shortage of slots, and the caller is told which option
 * to raise, whatever the other slots are pinned by (a held lock, or an acquisition waiting for one).
 */
describe('pinned connection slots (PostgreSQL pessimistic)', () => {
  let dataSource: DataSource;
  let manager: LockManager;
  let locks: LockService;

  beforeAll(async () => {
    dataSource = await initializeDataSource({ type: 'postgres', url: process.env.LOCK_TEST_POSTGRES_URL, entities: [Stock], synchronize: true, poolSize: 8 });
    manager = new LockManager(new PessimisticLockStrategy({ dataSource, maxHeldConnections: 2, name: 'pessimistic-slots' }));
    locks = new LockService(manager);
  });

  afterAll(async () => {
    await manager?.close();
    await dataSource?.destroy();
  });

  it('a free key kept out by slots pinned by a held lock and a waiter for it: the error names maxHeldConnections', async () => {
    const holder = await locks.acquire(`slots:${run}:busy`);
    // Waits for the held key on the second (and last) slot, for longer than the acquisition below.
    const waiter = locks.acquire(`slots:${run}:busy`, { waitTimeout: 3_000, reentrant: false }).catch((e: unknown) => e);
    // Time for it to take the slot and wait on the row, also on a loaded machine (the server cannot name the
    // key a row-lock waiter waits for, so this is a pause, not a poll).
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    // Nobody holds or waits for this key: with one more slot it would be granted at once.
    const outcome = await locks.acquire(`slots:${run}:free`, { waitTimeout: 300 }).catch((e: unknown) => e);
    await holder.release();
    const late = await waiter;
    if (late && typeof (late as LockHandle).release === 'function') await (late as LockHandle).release();
    if (outcome && typeof (outcome as LockHandle).release === 'function') await (outcome as LockHandle).release();
    expect(outcome).toBeInstanceOf(LockBackendUnavailableError);
    expect((outcome as Error).message).toMatch(/maxHeldConnections/);
  }, 20_000);
});

// Found by review: with scope "transaction" on MySQL/MariaDB the lock counted as held before its transaction
// started; when that start failed, the slot went back twice (once with the lock, once with the failed
// acquisition), and from then on one more lock than allowed could be pinned.
describe('pinned connection slots (MariaDB advisory, transaction scope)', () => {
  let dataSource: DataSource;
  let manager: LockManager;
  let locks: LockService;
  let failNextStart = false;

  @EventSubscriber()
  class FailingTransactionStart implements EntitySubscriberInterface {
    beforeTransactionStart(): void {
      if (!failNextStart) return;
      failNextStart = false;
      throw new Error('transaction start refused by the test');
    }
  }

  beforeAll(async () => {
    dataSource = await initializeDataSource({ type: 'mysql', url: process.env.LOCK_TEST_MYSQL_URL, entities: [Stock], subscribers: [FailingTransactionStart], synchronize: true, poolSize: 8 });
    manager = new LockManager(new AdvisoryLockStrategy({ dataSource, scope: 'transaction', maxHeldConnections: 1, name: 'advisory-xact-slots' }));
    locks = new LockService(manager);
  });

  afterAll(async () => {
    await manager?.close();
    await dataSource?.destroy();
  });

  it('gives the slot back once when the transaction fails to start after GET_LOCK: the limit still holds', async () => {
    failNextStart = true;
    await expect(locks.acquire(`slots:${run}:start-fails`)).rejects.toThrow('transaction start refused by the test');
    const first = await locks.acquire(`slots:${run}:a`);
    // The one slot is taken: a lock on another key cannot be had.
    expect(await locks.tryAcquire(`slots:${run}:b`)).toBeNull();
    await first.release();
    const second = await locks.acquire(`slots:${run}:b`);
    await second.release();
  });
});

/** A settled outcome, or 'hung' when none came within `ms` (the test must not wait for a hang). */
function within<T>(promise: Promise<T>, ms: number): Promise<T | unknown> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<string>((resolve) => (timer = setTimeout(() => resolve('hung'), ms)));
  return Promise.race([promise.catch((e: unknown) => e), hung]).finally(() => clearTimeout(timer));
}

/** What an outcome is, for one readable expectation: 'held', 'hung', or the error's name and message. */
function describeOutcome(outcome: unknown): string {
  if (outcome === 'hung') return 'hung';
  if (outcome instanceof Error) return `${outcome.name}: ${outcome.message}`;
  return 'held';
}

// Issue 42, item 7: a pool smaller than maxHeldConnections. Every held lock pins a connection; with as many
// locks allowed as the pool has connections, the acquisitions waited for a connection without bound (the
// lock service's silence bound then ended them after 5 s, past their waitTimeout), pessimistic locks waited
// for their token's second connection until their wait ended "held by another owner", and sections that
// queried through the same pool hung (MariaDB) or got pg-pool's untyped timeout (PostgreSQL).
describe.each([
  { name: 'MariaDB', options: (poolSize: number): DataSourceOptions => ({ type: 'mysql', url: process.env.LOCK_TEST_MYSQL_URL, poolSize }) },
  { name: 'PostgreSQL', options: (poolSize: number): DataSourceOptions => ({ type: 'postgres', url: process.env.LOCK_TEST_POSTGRES_URL, poolSize, connectTimeoutMS: 3_000 }) },
])('a pool smaller than maxHeldConnections ($name)', ({ name, options }) => {
  const strategies = [
    { kind: 'advisory', make: (o: { dataSource?: DataSource; connection?: DataSourceOptions; maxHeldConnections?: number }) => new AdvisoryLockStrategy({ ...o, name: `advisory-pool-${name}` }) },
    { kind: 'pessimistic', make: (o: { dataSource?: DataSource; connection?: DataSourceOptions; maxHeldConnections?: number }) => new PessimisticLockStrategy({ ...o, name: `pessimistic-pool-${name}` }) },
  ];
  const dataSources: DataSource[] = [];
  const managers: LockManager[] = [];
  const open = async (poolSize: number): Promise<DataSource> => {
    const dataSource = await initializeDataSource(options(poolSize));
    dataSources.push(dataSource);
    return dataSource;
  };
  const service = (strategy: AdvisoryLockStrategy | PessimisticLockStrategy): LockService => {
    const manager = new LockManager(strategy);
    managers.push(manager);
    return new LockService(manager);
  };
  afterAll(async () => {
    await Promise.all(managers.map((manager) => manager.close().catch(() => undefined)));
    await Promise.all(dataSources.map((dataSource) => dataSource.destroy().catch(() => undefined)));
  });

  it.each(strategies)('$kind: a maxHeldConnections not below the pool size is refused when the strategy is made, naming both numbers and the fix', ({ make }) => {
    for (const given of [{ dataSource: new DataSource(options(2)) }, { connection: options(2) }]) {
      const error = (() => {
        try {
          make({ ...given, maxHeldConnections: 8 });
          return undefined;
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(InvalidLockOptionsError);
      expect((error as Error).message).toMatch(/maxHeldConnections.*8 is not below the pool size of 2 .*at most 1.*poolSize/s);
    }
    // A pool of one connection leaves none for anything but the lock.
    expect(() => make({ connection: options(1) })).toThrow(InvalidLockOptionsError);
  });

  it.each(strategies)('$kind: with the default on a pool of 2, locks leave a connection free; a free key beyond them fails within its wait, naming the option', async ({ kind, make }) => {
    const dataSource = await open(2);
    const locks = service(make({ dataSource }));
    const holder = await locks.acquire(`pool:${run}:${kind}:held`);
    try {
      const started = Date.now();
      const outcome = await within(locks.acquire(`pool:${run}:${kind}:free`, { waitTimeout: 1_500 }), 12_000);
      const waitedMs = Date.now() - started;
      expect(describeOutcome(outcome)).toMatch(/^LockBackendUnavailableError: .*maxHeldConnections/);
      // Bounded by its own wait, not by the lock service's bound on a silent server (5 s).
      expect(waitedMs).toBeLessThan(1_500 + 1_500);
      // The application's own queries still get a connection while the lock is held.
      expect(await within(dataSource.query('SELECT 1 AS one'), 5_000)).toEqual([{ one: 1 }]);
    } finally {
      await holder.release();
    }
  }, 30_000);

  it.each(strategies)('$kind: two acquisitions of free keys at once on a pool of 2 both get their lock', async ({ kind, make }) => {
    const locks = service(make({ dataSource: await open(2) }));
    const outcomes = await Promise.all(
      ['a', 'b'].map((suffix) =>
        within(
          locks.withLock(`pool:${run}:${kind}:both:${suffix}`, () => 'ran', { waitTimeout: 4_000 }),
          15_000,
        ),
      ),
    );
    expect(outcomes).toEqual(['ran', 'ran']);
  }, 30_000);

  it.each(strategies)('$kind: sections that query through the same pool of 2 all run: no hang, no untyped error', async ({ kind, make }) => {
    const dataSource = await open(2);
    const locks = service(make({ dataSource }));
    const outcomes = await Promise.all(
      [0, 1, 2].map((i) =>
        within(
          locks.withLock(`pool:${run}:${kind}:shared:${i}`, async () => (await dataSource.query('SELECT 1 AS one')) as unknown, { waitTimeout: 6_000 }),
          15_000,
        ),
      ),
    );
    expect(outcomes.map(describeOutcome)).toEqual(['held', 'held', 'held']);
  }, 30_000);

  it.each(strategies)('$kind: a pool the application exhausted fails the acquisition within its wait, naming the pool; its connection is not kept', async ({ kind, make }) => {
    const dataSource = await open(3);
    const locks = service(make({ dataSource, maxHeldConnections: 2 }));
    const holder = await locks.acquire(`pool:${run}:${kind}:app-held`);
    // The application takes the two other connections for itself.
    const taken = [dataSource.createQueryRunner(), dataSource.createQueryRunner()];
    await Promise.all(taken.map((runner) => runner.connect()));
    try {
      const started = Date.now();
      const outcome = await within(locks.acquire(`pool:${run}:${kind}:app-free`, { waitTimeout: 1_500 }), 12_000);
      const waitedMs = Date.now() - started;
      expect(describeOutcome(outcome)).toMatch(/^LockBackendUnavailableError: .*connection pool \(3 connections\) is exhausted/);
      expect(waitedMs).toBeLessThan(1_500 + 1_500);
    } finally {
      await Promise.all(taken.map((runner) => runner.release()));
    }
    // The connection the abandoned acquisition waited for went back to the pool: the key can be had.
    const later = await within(locks.acquire(`pool:${run}:${kind}:app-free`, { waitTimeout: 3_000 }), 10_000);
    expect(describeOutcome(later)).toBe('held');
    await (later as LockHandle).release();
    await holder.release();
  }, 30_000);
});
