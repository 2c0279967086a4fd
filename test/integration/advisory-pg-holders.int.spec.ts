// The advisory strategy's holder rows on PostgreSQL, against the two ways a row left from an earlier grant
// could name a holder that let go (found by an adversarial pass): a later grant on the same pooled
// connection that wrote no row in that table (another strategy on the same DataSource), and a break whose
// terminate reaches the server after the holder it looked at let go and the next one took the key on the
// same connection.
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { LockManager, LockService, type Lock } from '@app/distributed-lock';
import { AdvisoryLockStrategy, type AdvisoryLockStrategyOptions } from '@app/distributed-lock/strategies/database';
import { delayingProxy } from '../support/delaying-proxy';

const run = randomUUID().slice(0, 8);
const url = (): string => process.env.LOCK_TEST_POSTGRES_URL as string;

/** A section that runs `ms`, or until its signal says the lock is gone: resolves how it ended. */
function section(locks: LockService, key: string, ms: number, held?: (lock: Lock) => void): Promise<string> {
  return locks
    .withLock(
      key,
      (lock) =>
        new Promise<string>((resolve) => {
          held?.(lock);
          const timer = setTimeout(() => resolve('completed'), ms);
          lock.signal.addEventListener('abort', () => (clearTimeout(timer), resolve('aborted')));
        }),
      { ttl: 10_000 },
    )
    .catch((error: { name?: string; reason?: string }) => `${error.name} ${error.reason}`);
}

describe('advisory strategy on PostgreSQL: a holder row left from an earlier grant names nobody', () => {
  const closing: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    await Promise.all(closing.splice(0).map((close) => close()));
  });
  const manager = (options: AdvisoryLockStrategyOptions): LockService => {
    const created = new LockManager(new AdvisoryLockStrategy(options));
    closing.push(() => created.close());
    return new LockService(created);
  };

  it.each([
    ['holders: false', false],
    ['a holder table of its own', 'adv_holders_other'],
  ] as const)('a key taken on the same pooled connection by a strategy with %s is shown by its connection, not by the row the first one left', async (_n, holders) => {
    const dataSource = new DataSource({ type: 'postgres', url: url(), poolSize: 2 });
    closing.push(async () => dataSource.isInitialized && dataSource.destroy());
    const first = manager({ dataSource, name: 'adv-first', maxHeldConnections: 1, holders: true });
    const second = manager({ dataSource, name: 'adv-second', maxHeldConnections: 1, holders });
    const observer = manager({ connection: { type: 'postgres', url: url(), poolSize: 3 }, name: 'adv-observer', holders: true });
    const key = `adv-left:${run}:${String(holders)}`;
    // Without holder rows a query names the connection: the case needs both grants on the same one.
    const byConnection = manager({ connection: { type: 'postgres', url: url(), poolSize: 3 }, name: 'adv-by-connection' });
    const earlier = await first.acquire(key, { ttl: 10_000 });
    const [earlierConnection] = (await byConnection.query(key)).held;
    await earlier.release();
    const later = await second.acquire(key, { ttl: 10_000 });
    expect((await byConnection.query(key)).held.map((h) => h.owner.id)).toEqual([earlierConnection.owner.id]);
    const [held] = (await observer.query(key)).held;
    expect(held.owner.id).not.toBe(earlier.owner);
    expect(held.owner.id).toBe(earlierConnection.owner.id);
    expect(held.fencingToken).toBeNull();
    // A strategy that writes the second one's table names it exactly.
    if (holders !== false) {
      const [named] = (await manager({ connection: { type: 'postgres', url: url(), poolSize: 3 }, name: 'adv-own-table', holders }).query(key)).held;
      expect([named.owner.id, named.fencingToken]).toEqual([later.owner, later.fencingToken]);
    }
    await later.release();
  }, 20_000);

  it('a break whose terminate reaches the server after the holder it named let go ends nobody, not the next holder on that connection', async () => {
    const proxy = await delayingProxy(url(), 'pg_terminate_backend', 400);
    closing.push(() => new Promise((resolve) => proxy.server.close(resolve)));
    const holder = manager({ connection: { type: 'postgres', url: url(), poolSize: 2 }, name: 'adv-holder', maxHeldConnections: 1, holders: true });
    const breaker = manager({ connection: { type: 'postgres', url: proxy.url, poolSize: 2 }, name: 'adv-breaker', holders: true });
    const key = `adv-late-break:${run}`;
    await breaker.query(key);
    let firstHolder: Lock | undefined;
    const first = section(holder, key, 150, (lock) => (firstHolder = lock));
    await expect.poll(() => firstHolder, { timeout: 5_000 }).toBeDefined();
    // Waits behind the first in this process, then takes the key on the same connection.
    const next = section(holder, key, 800);
    const broken = await breaker.breakLock(key, { reason: 'looks stuck' });
    expect([await first, await next]).toEqual(['completed', 'completed']);
    expect(broken).toEqual([]);
  }, 20_000);
});
