import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import type { LockService } from '@app/distributed-lock';
import { lockTransaction } from '@app/distributed-lock/strategies/database';
import { StockRow as Stock } from './stock-row.entity';

/** Writes through the lock's transaction commit with the release, and roll back when the section fails. */
export async function expectCommitsWithRelease(dataSource: DataSource, locks: LockService, prefix: string): Promise<string> {
  const sku = `${prefix}-${randomUUID().slice(0, 8)}`;
  await dataSource.getRepository(Stock).insert({ sku, quantity: 10 });
  await locks.withLock(`stock:${sku}`, async (lock) => {
    await lockTransaction(lock).getRepository(Stock).decrement({ sku }, 'quantity', 1);
    // Not visible outside the lock's transaction before the release.
    expect((await dataSource.getRepository(Stock).findOneByOrFail({ sku })).quantity).toBe(10);
  });
  expect((await dataSource.getRepository(Stock).findOneByOrFail({ sku })).quantity).toBe(9);
  await expect(
    locks.withLock(`stock:${sku}`, async (lock) => {
      await lockTransaction(lock).getRepository(Stock).decrement({ sku }, 'quantity', 5);
      throw new Error('payment declined');
    }),
  ).rejects.toThrow('payment declined');
  expect((await dataSource.getRepository(Stock).findOneByOrFail({ sku })).quantity).toBe(9);
  return sku;
}
