import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { currentLock, Locked, LockService, OptimisticVersion } from '@app/distributed-lock';
import { fencedUpdate, optimisticUpdate } from '@app/distributed-lock/strategies/database';
import type { DataSource, EntityManager } from 'typeorm';
import { demoConfig, type DemoConfig } from '../config/demo-config';
import { HoldLog } from './hold-log';
import { preciseNow } from '../clock/precise-now';
import { SoldOutError, UnknownProductError } from './inventory.errors';
import { Order } from './order.entity';
import { Product } from './product.entity';

/** Stands for the work a real checkout does between reading and writing the stock (payment, fraud check). */
export const CHECKOUT_WORK_MS = 2;
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
/** The stock's lock key, as the inventory module's prefix makes it; unlocked sections are logged under it too. */
const stockKey = (sku: string): string => `inventory:stock:${sku}`;

/**
 * The stock deduction, five ways. All read the stock, do some checkout work, write the new stock and
 * record the order; only the guard differs.
 */
@Injectable()
export class InventoryService {
  /** Optimistic attempts, to report how many conflicts the sale had. */
  optimisticAttempts = 0;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(demoConfig.KEY) private readonly config: DemoConfig,
    readonly locks: LockService,
    private readonly holds: HoldLog,
  ) {}

  async createProduct(sku: string, name: string, stock: number): Promise<Product> {
    await this.dataSource.getRepository(Order).delete({ sku });
    await this.dataSource.getRepository(Product).delete({ sku });
    return this.dataSource.getRepository(Product).save({ sku, name, stock, lastFence: 0 });
  }

  async product(sku: string): Promise<Product> {
    const product = await this.dataSource.getRepository(Product).findOneBy({ sku });
    if (!product) throw new UnknownProductError(sku);
    return product;
  }

  /** No guard: read, work, write. Two buyers who read the same stock both sell the same item. */
  async buyUnguarded(sku: string, buyer: string): Promise<Order> {
    const startedAt = preciseNow();
    const product = await this.product(sku);
    if (product.stock <= 0) throw new SoldOutError(sku);
    await sleep(CHECKOUT_WORK_MS);
    await this.dataSource.getRepository(Product).update({ sku }, { stock: product.stock - 1 });
    this.holds.section(stockKey(sku), startedAt);
    return this.recordOrder(this.dataSource.manager, sku, buyer, 'unguarded', null);
  }

  /**
   * The correct answer without any lock, as the reference a lock is measured against: the checkout work,
   * then one conditional UPDATE that the database applies only while there is stock.
   */
  async buyAtomic(sku: string, buyer: string): Promise<Order> {
    await this.product(sku);
    await sleep(CHECKOUT_WORK_MS);
    const startedAt = preciseNow();
    const order = this.dataSource.options.type === 'postgres' ? await this.takeInOneStatement(sku, buyer) : await this.takeInTransaction(sku, buyer);
    this.holds.section(stockKey(sku), startedAt);
    return order;
  }

  /** The deduction and its order in one transaction of two statements (MySQL/MariaDB and SQLite have no UPDATE in a WITH). */
  private takeInTransaction(sku: string, buyer: string): Promise<Order> {
    return this.dataSource.transaction(async (manager) => {
      const result = await manager
        .createQueryBuilder()
        .update(Product)
        .set({ stock: () => 'stock - 1' })
        .where('sku = :sku AND stock > 0', { sku })
        .execute();
      if (result.affected !== 1) throw new SoldOutError(sku);
      return this.recordOrder(manager, sku, buyer, 'atomic', null);
    });
  }

  /**
   * PostgreSQL: the deduction and its order in one statement. The row's lock, which the UPDATE takes, is
   * then held inside the server only, not across the client's round trips of a transaction: that is the
   * lock-free reference at its best. It moves the version column as TypeORM's update does, so that an
   * optimistic purchase of the same product that read the stock before sees the conflict.
   */
  private async takeInOneStatement(sku: string, buyer: string): Promise<Order> {
    const order = Object.assign(new Order(), { id: randomUUID(), buyer, sku, instance: this.config.instance, strategy: 'atomic', fencingToken: null });
    const rows = (await this.dataSource.query(
      `WITH taken AS (UPDATE demo_products SET stock = stock - 1, version = version + 1 WHERE sku = $1 AND stock > 0 RETURNING sku)
       INSERT INTO demo_orders (id, buyer, sku, instance, strategy, "fencingToken") SELECT $2, $3, sku, $4, $5, NULL FROM taken RETURNING "createdAt"`,
      [sku, order.id, buyer, order.instance, order.strategy],
    )) as { createdAt: Date }[];
    if (rows.length !== 1) throw new SoldOutError(sku);
    order.createdAt = rows[0].createdAt;
    return order;
  }

  /**
   * Guarded by the inventory module's lock strategy. The write also checks the fencing token, so that a
   * holder whose lock was lost (lease expired during a long pause, a failover) cannot write over a newer
   * holder, nor a newer holder over a late write it did not read.
   */
  // A purchase answers well within its HTTP server's bounds: 25 s for the stock, 20 s for a payment permit.
  @Locked('stock:{0}', { waitTimeout: 25_000, retry: { maxDelay: 20 } })
  async buyLocked(sku: string, buyer: string): Promise<Order> {
    const startedAt = preciseNow();
    const lock = currentLock();
    const token = lock?.fencingToken ?? null;
    try {
      return await this.deductUnderLock(sku, buyer, token);
    } finally {
      this.holds.locked(stockKey(sku), startedAt, token);
    }
  }

  private async deductUnderLock(sku: string, buyer: string, token: number | null): Promise<Order> {
    const lock = currentLock();
    const product = await this.product(sku);
    if (product.stock <= 0) throw new SoldOutError(sku);
    await sleep(CHECKOUT_WORK_MS);
    lock?.throwIfLost();
    // The deduction and its order commit together: a database that fails between them (restart, lost
    // connection) leaves neither, never an item gone without its order.
    return this.dataSource.transaction(async (manager) => {
      const set = { stock: product.stock - 1 };
      // Refused (FencedWriteRefusedError, 409 STALE_LOCK) when a newer holder wrote, and also when anyone
      // wrote since this read: `lastFence < token` alone would let a newer holder that read the stock before
      // an older holder's late write landed write the same stock again. Redlock and memcached have no token.
      if (token !== null) await fencedUpdate({ manager, entity: Product, id: sku, token, seenFence: product.lastFence, fenceProperty: 'lastFence', set });
      else await manager.getRepository(Product).update({ sku }, set);
      return this.recordOrder(manager, sku, buyer, this.locks.backendName, token);
    });
  }

  /** No lock: the version column rejects a write based on a stale read, and the method is re-run. */
  @OptimisticVersion({ retries: 200, backoff: { initialDelay: 2, maxDelay: 40 } })
  async buyOptimistic(sku: string, buyer: string): Promise<Order> {
    this.optimisticAttempts += 1;
    const startedAt = preciseNow();
    const product = await this.product(sku);
    if (product.stock <= 0) throw new SoldOutError(sku);
    await sleep(CHECKOUT_WORK_MS);
    const order = await this.dataSource.transaction(async (manager) => {
      await optimisticUpdate({ manager, entity: Product, id: sku, expectedVersion: product.version, set: { stock: product.stock - 1 } });
      return this.recordOrder(manager, sku, buyer, 'optimistic', null);
    });
    this.holds.section(stockKey(sku), startedAt);
    return order;
  }

  /** Writes an order; `manager` decides which transaction it belongs to. */
  async recordOrder(manager: EntityManager, sku: string, buyer: string, strategy: string, fencingToken: number | null): Promise<Order> {
    const orders = manager.getRepository(Order);
    return orders.save(orders.create({ sku, buyer, strategy, fencingToken, instance: this.config.instance }));
  }
}
