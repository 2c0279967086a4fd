import { Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { DistributedLockModule } from '@app/distributed-lock';
import { ReportsService } from './reports.service';
import { StockReportJob } from './stock-report.job';

/**
 * Reports lock with the "reports" strategy (in-process): another module, another strategy. With
 * DEMO_STOCK_REPORT_LOG set, a scheduled stock report too, once per tick across the instances.
 */
@Module({
  imports: [DistributedLockModule.forFeature({ strategy: 'reports', keyPrefix: 'reports:' }), ScheduleModule.forRoot()],
  providers: [ReportsService, ...(process.env.DEMO_STOCK_REPORT_LOG ? [StockReportJob] : [])],
  exports: [ReportsService],
})
export class ReportsModule {}
