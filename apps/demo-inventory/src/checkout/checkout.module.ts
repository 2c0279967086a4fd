import { Module } from '@nestjs/common';
import { DistributedLockModule } from '@app/distributed-lock';
import { InventoryModule } from '../inventory/inventory.module';
import { PessimisticCheckoutService } from './pessimistic-checkout.service';

/** Checkout through a database transaction lock: this module's strategy is "pessimistic". */
@Module({
  imports: [InventoryModule, DistributedLockModule.forFeature({ strategy: 'pessimistic', keyPrefix: 'inventory:' })],
  providers: [PessimisticCheckoutService],
  exports: [PessimisticCheckoutService],
})
export class CheckoutModule {}
