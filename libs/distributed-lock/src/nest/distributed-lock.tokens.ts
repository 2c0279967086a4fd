import { LockService } from '../locking/lock-service';
import { DEFAULT_STRATEGY_NAME } from './distributed-lock.constants';

/** Token of a module's `forFeature` registration (`DistributedLockFeature`), exported to the module that imports it. */
export const DISTRIBUTED_LOCK_FEATURE = Symbol('DISTRIBUTED_LOCK_FEATURE');

/**
 * Injection token of the `LockService` for a named strategy. Without a name (or "default") it is the
 * `LockService` class itself, so plain constructor injection works.
 */
export function getLockServiceToken(strategy?: string): string | typeof LockService {
  return strategy === undefined || strategy === DEFAULT_STRATEGY_NAME ? LockService : `DistributedLockService:${strategy}`;
}

/** Injection token of the `LeaderElection` registered under `name` (see `forFeature({ elections })`). */
export function getLeaderElectionToken(name: string): string {
  return `DistributedLockLeaderElection:${name}`;
}
