import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Locked } from '@app/distributed-lock';
import type { DataSource } from 'typeorm';
import { Order } from '../inventory/order.entity';
import { Product } from '../inventory/product.entity';

/** Sales figures. Its lock (one report computed at a time per instance) uses the in-process "reports" strategy. */
@Injectable()
export class ReportsService {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  @Locked('report:{0}', { waitTimeout: 5_000 })
  async summary(sku: string): Promise<{ sku: string; stock: number; orders: number; byInstance: Record<string, number> }> {
    const product = await this.dataSource.getRepository(Product).findOneBy({ sku });
    const rows = (await this.dataSource
      .getRepository(Order)
      .createQueryBuilder('o')
      .select('o.instance', 'instance')
      .addSelect('COUNT(*)', 'count')
      .where('o.sku = :sku', { sku })
      .groupBy('o.instance')
      .getRawMany()) as Array<{ instance: string; count: string | number }>;
    const byInstance = Object.fromEntries(rows.map((row) => [row.instance, Number(row.count)]));
    return { sku, stock: product?.stock ?? 0, orders: Object.values(byInstance).reduce((a, b) => a + b, 0), byInstance };
  }
}
