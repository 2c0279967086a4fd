import type { LeaderElectionOptions } from '../election/leader-election-options';
import type { LockDefaults } from '../locking/lock-options';
import type { LockStrategy } from '../locking/lock-strategy.interface';
import type { LogKeys } from './log-keys';

/** Options of `DistributedLockModule.forRoot` (and what a `forRootAsync` factory returns). */
export interface DistributedLockModuleOptions {
  /**
   * The strategies this application can lock with, by name, e.g.
   * `{ default: new InMemoryLockStrategy(), redis: new RedisLockStrategy({ client }) }`.
   * The module closes each strategy at shutdown; a strategy never closes a client you passed to it.
   */
  readonly strategies: Readonly<Record<string, LockStrategy>>;
  /** Name of the strategy used where none is named. Default: "default" if registered, else the only one. */
  readonly defaultStrategy?: string;
  /** Prefix for every key of the application, e.g. "shop:". Default "". */
  readonly keyPrefix?: string;
  /** Defaults for every acquisition (ttl, waitTimeout, retry, reentrant, mode, autoExtend). */
  readonly defaults?: LockDefaults;
  /** Bound of one server call, in ms. Default 5 000. */
  readonly operationTimeout?: number;
  /**
   * Log lost locks (warn), background failures (error) and skipped `@ScheduledLock` runs (debug) through
   * Nest's Logger. Default true.
   */
  readonly logEvents?: boolean;
  /**
   * How those log lines show lock keys, which can carry user data: `'plain'` (default) or `'hashed'`
   * (`key#` and the first 12 hex digits of the key's SHA-256, also inside a quoted error message). Errors
   * and events keep the key itself.
   */
  readonly logKeys?: LogKeys;
}

/** Options of `DistributedLockModule.forFeature`: the strategy and prefix of one feature module. */
export interface DistributedLockFeatureOptions {
  /** Strategy of this module's `LockService` and `@Locked` methods. Default: the module default. */
  readonly strategy?: string;
  /** Added after the application prefix, e.g. "inventory:". Default "". */
  readonly keyPrefix?: string;
  /** Defaults for this module's acquisitions, over the application's. */
  readonly defaults?: LockDefaults;
  /**
   * Leader elections on this module's strategy and prefix, by name or with options (`ttl`, `retry`):
   * each is injectable in this module with `@InjectLeaderElection(name)`, campaigns from application
   * bootstrap and resigns at shutdown. One name is one election in the application. Default none.
   */
  readonly elections?: readonly (string | LeaderElectionOptions)[];
}

/** Implemented by a class given to `forRootAsync({ useClass })`. */
export interface DistributedLockOptionsFactory {
  createDistributedLockOptions(): DistributedLockModuleOptions | Promise<DistributedLockModuleOptions>;
}
