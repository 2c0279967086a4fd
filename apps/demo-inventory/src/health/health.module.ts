import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { DistributedLockHealthIndicator } from '@app/distributed-lock/nest/health';
import { HealthController } from './health.controller';

@Module({
  imports: [TerminusModule],
  controllers: [HealthController],
  providers: [DistributedLockHealthIndicator],
})
export class HealthModule {}
