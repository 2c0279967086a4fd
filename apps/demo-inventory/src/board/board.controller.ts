import { Controller, Get, Header, Inject } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { demoConfig, type DemoConfig } from '../config/demo-config';
import { Product } from '../inventory/product.entity';
import { PAYMENT_KEY } from '../payments/payment.service';
import { boardPage } from './board-page';

/** A key the board watches: what it guards, and where `GET /ops/locks` finds it. */
export interface WatchedKey {
  readonly label: string;
  readonly key: string;
  readonly strategy: string;
  /** A lock (`GET /ops/locks`) or a semaphore (`GET /ops/locks/permits`). */
  readonly kind: 'lock' | 'semaphore';
}

/** The job's lock: `@ScheduledLock({ name: 'stock-report', strategy: 'inventory' })` in the reports module ("reports:"). */
const STOCK_REPORT_KEY = 'reports:stock-report';

/**
 * The live lock board: a page that asks `GET /ops/locks` (the library's operator endpoints, mounted in the
 * app module) who holds each of the shop's keys and who waits, several times a second.
 */
@Controller('board')
export class BoardController {
  constructor(
    @InjectRepository(Product) private readonly products: Repository<Product>,
    @Inject(demoConfig.KEY) private readonly config: DemoConfig,
  ) {}

  @Get()
  @Header('content-type', 'text/html; charset=utf-8')
  page(): string {
    return boardPage(this.config.instance);
  }

  /** The keys to watch: each product's stock lock (the first 20 products), the payment step's semaphore, and the stock report job's lock. */
  @Get('keys')
  async keys(): Promise<WatchedKey[]> {
    const products = await this.products.find({ select: { sku: true }, order: { sku: 'ASC' }, take: 20 });
    return [
      ...products.map((product) => ({ label: `stock of ${product.sku}`, key: `inventory:stock:${product.sku}`, strategy: 'inventory', kind: 'lock' as const })),
      { label: 'payment calls', key: PAYMENT_KEY, strategy: 'payments', kind: 'semaphore' },
      { label: 'stock report job', key: STOCK_REPORT_KEY, strategy: 'inventory', kind: 'lock' },
    ];
  }
}
