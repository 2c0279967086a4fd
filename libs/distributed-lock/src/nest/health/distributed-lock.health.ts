import { Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { runBounded } from '../../locking/bounded-operation';
import { LOCK_DEFAULTS } from '../../locking/lock-options';
import { LockRegistry } from '../lock-registry';

/**
 * A `@nestjs/terminus` health indicator per lock strategy: "up" when the backend answers a cheap round
 * trip within the operation timeout. Import it from `…/nest/health` (it needs `@nestjs/terminus`, an
 * optional peer dependency) and list it in the providers of the module that has `TerminusModule`.
 *
 * @example
 * this.health.check([() => this.locks.isHealthy('lock:redis', 'redis')])
 */
@Injectable()
export class DistributedLockHealthIndicator {
  constructor(
    private readonly registry: LockRegistry,
    private readonly health: HealthIndicatorService,
  ) {}

  /** Checks one strategy (default: the application default); `key` names the entry in the health report. */
  async isHealthy<const Key extends string>(key: Key, strategy?: string, timeoutMs: number = LOCK_DEFAULTS.operationTimeout): Promise<HealthIndicatorResult<Key>> {
    const session = this.health.check(key);
    const manager = this.registry.manager(strategy);
    const started = Date.now();
    try {
      await runBounded({
        strategy: manager.strategyName,
        operation: 'ping',
        timeoutMs,
        run: async () => {
          if (manager.strategy.ping) await manager.strategy.ping();
        },
      });
      return session.up({ strategy: manager.strategyName, backend: manager.strategy.name, latencyMs: Date.now() - started, held: manager.heldCount });
    } catch (error) {
      return session.down({ strategy: manager.strategyName, backend: manager.strategy.name, message: error instanceof Error ? error.message : String(error) });
    }
  }
}
