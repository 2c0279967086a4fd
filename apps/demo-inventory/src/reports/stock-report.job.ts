import { appendFileSync } from 'node:fs';
import { Injectable } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { InjectDataSource } from '@nestjs/typeorm';
import { assertLocked, ScheduledLock } from '@app/distributed-lock';
import type { DataSource } from 'typeorm';
import { Product } from '../inventory/product.entity';

/** One line of the stock report log: a tick's run beginning (`start`), then its report (`end`). */
export interface StockReportLine {
  readonly kind: 'start' | 'end';
  /** The tick (ms since epoch, on the instance's clock) the run belongs to. */
  readonly tick: number;
  readonly instance: string;
  readonly at: number;
  readonly token?: number;
  readonly totalStock?: number;
}

/**
 * Writes a stock report every second, once across the shop's instances: every instance schedules it,
 * the one that takes the lock (the inventory strategy, shared by the instances) runs it, the others skip
 * that tick. Registered when DEMO_STOCK_REPORT_LOG names the file the reports go to.
 */
@Injectable()
export class StockReportJob {
  private readonly file = process.env.DEMO_STOCK_REPORT_LOG as string;
  private readonly instance = process.env.INSTANCE_NAME ?? `instance-${process.pid}`;
  private readonly workMs = Number(process.env.DEMO_STOCK_REPORT_WORK_MS ?? 300);

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  @Cron('* * * * * *')
  @ScheduledLock({ name: 'stock-report', strategy: 'inventory', lockAtMostFor: 3_000, lockAtLeastFor: 500 })
  async writeStockReport(): Promise<void> {
    const lock = assertLocked('stock-report');
    const tick = Math.floor(Date.now() / 1_000) * 1_000;
    this.write({ kind: 'start', tick, instance: this.instance, at: Date.now(), token: lock.fencingToken });
    const products = await this.dataSource.getRepository(Product).find();
    // A report that takes a moment to write: an instance can be killed in the middle of one.
    await new Promise((resolve) => setTimeout(resolve, this.workMs));
    const totalStock = products.reduce((sum, product) => sum + product.stock, 0);
    this.write({ kind: 'end', tick, instance: this.instance, at: Date.now(), totalStock });
  }

  private write(line: StockReportLine): void {
    appendFileSync(this.file, `${JSON.stringify(line)}\n`);
  }
}
