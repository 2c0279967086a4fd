import { Module } from '@nestjs/common';
import { DistributedLockModule } from '@app/distributed-lock';
import { InventoryModule } from '../inventory/inventory.module';
import { PaymentService } from './payment.service';

/** The payment step. Its `@Limited` methods use the "payments" strategy: the lock table, which has semaphores on every demo database. */
@Module({
  imports: [InventoryModule, DistributedLockModule.forFeature({ strategy: 'payments', keyPrefix: 'checkout:' })],
  providers: [PaymentService],
  exports: [PaymentService],
})
export class PaymentsModule {}
