import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TypeOrmHealthIndicator, type HealthCheckResult } from '@nestjs/terminus';
import { LockRegistry } from '@app/distributed-lock';
import { DistributedLockHealthIndicator } from '@app/distributed-lock/nest/health';

/** GET /health: the database and one entry per lock strategy in use. */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly db: TypeOrmHealthIndicator,
    private readonly locks: DistributedLockHealthIndicator,
    private readonly registry: LockRegistry,
  ) {}

  @Get()
  @HealthCheck()
  check(): Promise<HealthCheckResult> {
    return this.health.check([() => this.db.pingCheck('database'), ...this.registry.names.map((name) => () => this.locks.isHealthy(`lock:${name}`, name))]);
  }
}
