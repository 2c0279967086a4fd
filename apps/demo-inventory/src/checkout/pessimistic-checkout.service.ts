import { Injectable } from '@nestjs/common';
import { currentLock, Locked } from '@app/distributed-lock';
import { lockTransaction } from '@app/distributed-lock/strategies/database';
import { SoldOutError, UnknownProductError } from '../inventory/inventory.errors';
import { HoldLog } from '../inventory/hold-log';
import { preciseNow } from '../clock/precise-now';
import { CHECKOUT_WORK_MS, InventoryService, sleep } from '../inventory/inventory.service';
import type { Order } from '../inventory/order.entity';
import { Product } from '../inventory/product.entity';

/**
 * The pessimistic variant, in a module of its own whose strategy is `pessimistic` (forFeature): the lock
 * is a `SELECT … FOR UPDATE` transaction, and the stock and the order are written through it, so they
 * commit together with the release, or not at all if the method throws.
 */
@Injectable()
export class PessimisticCheckoutService {
  constructor(
    private readonly inventory: InventoryService,
    private readonly holds: HoldLog,
  ) {}

  // As the inventory's purchase: 25 s for the stock, then 20 s at most for a payment permit.
  @Locked('stock:{0}', { waitTimeout: 25_000 })
  async buy(sku: string, buyer: string): Promise<Order> {
    const startedAt = preciseNow();
    try {
      return await this.buyInTransaction(sku, buyer);
    } finally {
      this.holds.locked(`inventory:stock:${sku}`, startedAt, currentLock()?.fencingToken ?? null);
    }
  }

  private async buyInTransaction(sku: string, buyer: string): Promise<Order> {
    const lock = currentLock();
    const manager = lockTransaction(lock);
    const product = await manager.getRepository(Product).findOneBy({ sku });
    if (!product) throw new UnknownProductError(sku);
    if (product.stock <= 0) throw new SoldOutError(sku);
    // The same checkout work as the other variants, here inside the transaction that holds the row.
    await sleep(CHECKOUT_WORK_MS);
    await manager.getRepository(Product).update({ sku }, { stock: product.stock - 1, lastFence: lock?.fencingToken ?? 0 });
    return this.inventory.recordOrder(manager, sku, buyer, 'pessimistic', lock?.fencingToken ?? null);
  }
}
