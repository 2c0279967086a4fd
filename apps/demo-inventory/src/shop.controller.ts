import { BadRequestException, Body, Controller, Get, HttpCode, Optional, Param, Post } from '@nestjs/common';
import { PessimisticCheckoutService } from './checkout/pessimistic-checkout.service';
import { BuyDto, CreateProductDto } from './inventory/buy.dto';
import { fencedOrderOf } from './inventory/fenced-order';
import { HoldLog, type Hold } from './inventory/hold-log';
import { preciseNow } from './clock/precise-now';
import { InventoryService } from './inventory/inventory.service';
import type { Order } from './inventory/order.entity';
import type { Product } from './inventory/product.entity';
import { PaymentService } from './payments/payment.service';
import { ReportsService } from './reports/reports.service';

/** The HTTP face of the shop. Controllers stay thin: locking lives on the service methods. */
@Controller()
export class ShopController {
  constructor(
    private readonly inventory: InventoryService,
    private readonly reports: ReportsService,
    private readonly holds: HoldLog,
    @Optional() private readonly payments?: PaymentService,
    @Optional() private readonly pessimistic?: PessimisticCheckoutService,
  ) {}

  @Post('products')
  createProduct(@Body() dto: CreateProductDto): Promise<Product> {
    return this.inventory.createProduct(dto.sku, dto.name, dto.stock);
  }

  @Get('products/:sku')
  product(@Param('sku') sku: string): Promise<Product> {
    return this.inventory.product(sku);
  }

  @Post('buy')
  @HttpCode(201)
  async buy(@Body() dto: BuyDto): Promise<Pick<Order, 'id' | 'instance' | 'strategy' | 'fencingToken'> & { placedAt: number }> {
    const order = await this.place(dto);
    // When the purchase was done (ms since the epoch): the item taken and its guard let go (the lock released,
    // the transaction committed). The sale's sell-out time, which the payment's wait must not blur.
    const placedAt = preciseNow();
    // The stock is taken; the payment runs outside the stock lock, at most PAYMENT_PERMITS at once.
    await this.payments?.charge();
    return { id: order.id, instance: order.instance, strategy: order.strategy, fencingToken: order.fencingToken, placedAt };
  }

  @Get('reports/:sku')
  report(@Param('sku') sku: string): ReturnType<ReportsService['summary']> {
    return this.reports.summary(sku);
  }

  @Get('stats')
  stats(): { optimisticAttempts: number; inventoryStrategy: string } {
    return { optimisticAttempts: this.inventory.optimisticAttempts, inventoryStrategy: this.inventory.locks.backendName };
  }

  /** The lock holds since the last call (the demo's utilization figure). */
  @Get('holds')
  holdsSinceLastCall(): Hold[] {
    return this.holds.drain();
  }

  private place(dto: BuyDto): Promise<Order> {
    switch (dto.mode) {
      case 'unguarded':
        return this.inventory.buyUnguarded(dto.sku, dto.buyer);
      case 'atomic':
        return this.inventory.buyAtomic(dto.sku, dto.buyer);
      case 'locked':
        return this.inventory.buyLocked(dto.sku, dto.buyer).catch(fencedOrderOf);
      case 'optimistic':
        return this.inventory.buyOptimistic(dto.sku, dto.buyer);
      case 'pessimistic':
        if (!this.pessimistic) throw new BadRequestException('the pessimistic checkout needs MySQL/MariaDB or PostgreSQL (DEMO_DATABASE=mysql or postgres)');
        return this.pessimistic.buy(dto.sku, dto.buyer);
    }
  }
}
