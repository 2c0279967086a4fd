import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DistributedLockModule } from '@app/distributed-lock';
import { HoldLog } from './hold-log';
import { InventoryService } from './inventory.service';
import { Order } from './order.entity';
import { Product } from './product.entity';

/** Stock and orders. Its `@Locked` methods use the "inventory" strategy, chosen by configuration. */
@Module({
  imports: [TypeOrmModule.forFeature([Product, Order]), DistributedLockModule.forFeature({ strategy: 'inventory', keyPrefix: 'inventory:' })],
  providers: [InventoryService, HoldLog],
  exports: [InventoryService, HoldLog],
})
export class InventoryModule {}
