import type { LockService } from '../locking/lock-service';
import type { DistributedLockFeatureOptions } from './distributed-lock-options.interface';
import type { LockRegistry } from './lock-registry';

/**
 * One `forFeature` registration: its options and the `LockService` its module provides (the module's
 * `LockService` and `@InjectLockService(strategy)` are this very instance). The explorer gets it from the
 * host module's injector, so a `@Locked` or `@ScheduledLock` method locks through the service its class
 * would be injected, not through a copy of it.
 */
export class DistributedLockFeature {
  /** Services on other strategies that decorators of this module name: the module's prefix and defaults on them, built once each. */
  private readonly others = new Map<string, LockService>();

  constructor(
    readonly options: DistributedLockFeatureOptions,
    readonly service: LockService,
    private readonly registry: LockRegistry,
  ) {}

  /** The service of a method that names `strategy` (or none): the module's own, unless it names another one. */
  serviceFor(strategy: string | undefined, usedBy: string): LockService {
    if (strategy === undefined || strategy === this.service.strategyName) return this.service;
    let other = this.others.get(strategy);
    if (!other) {
      other = this.registry.service({ ...this.options, strategy }, usedBy);
      this.others.set(strategy, other);
    }
    return other;
  }
}

/**
 * The service a decorated method locks through: its module's `forFeature` service, else the application's
 * (of the strategy the decorator names, else the default). Throws `StrategyNotRegisteredError` naming
 * `usedBy` when the strategy is unknown.
 */
export function lockServiceOf(registry: LockRegistry, feature: DistributedLockFeature | undefined, strategy: string | undefined, usedBy: string): LockService {
  return feature ? feature.serviceFor(strategy, usedBy) : registry.service({ strategy }, usedBy);
}
