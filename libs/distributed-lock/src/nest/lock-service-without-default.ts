import { StrategyNotRegisteredError } from '../errors/strategy-not-registered.error';
import type { LockService } from '../locking/lock-service';
import { DEFAULT_STRATEGY_NAME } from './distributed-lock.constants';

/** What Nest and other libraries read on every provider (lifecycle hooks, thenables, inspection): not a use. */
const NOT_A_USE = new Set(['onModuleInit', 'onApplicationBootstrap', 'onModuleDestroy', 'beforeApplicationShutdown', 'onApplicationShutdown', 'then', 'toJSON', 'constructor']);

/**
 * The application's `LockService` when several strategies are registered and none is the default: Nest
 * creates every provider, whether anyone injects it or not, so the provider cannot fail by itself. Injecting
 * it is what fails: `DefaultLockServiceCheck` names the class that injects it at bootstrap, and any use of
 * it (from a constructor, say) throws `StrategyNotRegisteredError` saying it names no strategy.
 */
export function lockServiceWithoutDefault(registered: readonly string[]): LockService {
  return new Proxy(Object.create(null) as object, {
    get(_target, property) {
      if (typeof property === 'symbol' || NOT_A_USE.has(property)) return undefined;
      throw new StrategyNotRegisteredError(DEFAULT_STRATEGY_NAME, registered, `LockService (injected without a strategy name, its ${property})`, true);
    },
  }) as LockService;
}
