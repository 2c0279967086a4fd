import { Module } from '@nestjs/common';
import { LockMetrics } from './lock-metrics';
import { MetricsController } from './metrics.controller';

@Module({
  controllers: [MetricsController],
  providers: [LockMetrics],
  exports: [LockMetrics],
})
export class MetricsModule {}
