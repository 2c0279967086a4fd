import { Module } from '@nestjs/common';
import { DistributedLockModule } from '@app/distributed-lock';
import { ReportsService } from './reports.service';

/** Reports lock with the "reports" strategy (in-process): another module, another strategy. */
@Module({
  imports: [DistributedLockModule.forFeature({ strategy: 'reports', keyPrefix: 'reports:' })],
  providers: [ReportsService],
  exports: [ReportsService],
})
export class ReportsModule {}
