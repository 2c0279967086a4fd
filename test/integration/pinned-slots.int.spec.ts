import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { DataSource, EventSubscriber, type EntitySubscriberInterface } from 'typeorm';
import { LockBackendUnavailableError, type LockHandle, LockManager, LockService } from '@app/distributed-lock';
import { AdvisoryLockStrategy, PessimisticLockStrategy } from '@app/distributed-lock/strategies/database';
import { StockRow as Stock } from '../support/stock-row.entity';

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
    dataSource = await new DataSource({ type: 'postgres', url: process.env.LOCK_TEST_POSTGRES_URL, entities: [Stock], synchronize: true, poolSize: 8 }).initialize();
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
    dataSource = await new DataSource({ type: 'mysql', url: process.env.LOCK_TEST_MYSQL_URL, entities: [Stock], subscribers: [FailingTransactionStart], synchronize: true, poolSize: 8 }).initialize();
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
