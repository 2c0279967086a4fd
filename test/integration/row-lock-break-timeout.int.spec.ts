// A break of the lock table that runs out of its operation timeout while its look at the holder is still on
// its way ends nothing after its caller was told it failed: the holder keeps its lock. Found in review (stop
// 62): the break went on to free the holder's row once the look answered, after the caller's
// LockBackendUnavailableError.
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { LockBackendUnavailableError, LockManager, LockService } from '@app/distributed-lock';
import { RowLockStrategy } from '@app/distributed-lock/strategies/database';
import { delayingProxy } from '../support/delaying-proxy';

const run = randomUUID().slice(0, 8);
const mysqlUrl = (): string => process.env.LOCK_TEST_MYSQL_URL as string;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('lock table: a breakLock that runs out of its operation timeout', () => {
  it('frees nobody once its caller was told it failed', async () => {
    // The look at the holder (the inspection's UNION of holder and waiters) reaches the server 600 ms late.
    const proxy = await delayingProxy(mysqlUrl(), 'UNION ALL', 600);
    const holderManager = new LockManager(new RowLockStrategy({ connection: { type: 'mysql', url: mysqlUrl(), poolSize: 2 } }));
    const breakerManager = new LockManager(new RowLockStrategy({ connection: { type: 'mysql', url: proxy.url, poolSize: 2 } }), { operationTimeout: 300 });
    const key = `row-break-timeout:${run}`;
    try {
      const held = await new LockService(holderManager).acquire(key, { ttl: 10_000 });
      const broken = await new LockService(breakerManager).breakLock(key, { reason: 'ops: timeout' }).catch((error: unknown) => error);
      expect(broken).toBeInstanceOf(LockBackendUnavailableError);
      // The look answers at about 600 ms; a break that went on would free the row right after.
      await sleep(1_000);
      const seen = await new LockService(holderManager).query(key);
      expect(seen.held.map((holder) => holder.owner.id)).toEqual([held.owner]);
      expect(await held.extend()).toBeUndefined();
      expect(await held.release()).toBe(true);
    } finally {
      await Promise.allSettled([holderManager.close(), breakerManager.close()]);
      proxy.server.close();
    }
  }, 20_000);
});
