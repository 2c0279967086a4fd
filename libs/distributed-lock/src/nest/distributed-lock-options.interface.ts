import type { LeaderElectionOptions } from '../election/leader-election-options';
import type { LockDefaults } from '../locking/lock-options';
import type { LockStrategy } from '../locking/lock-strategy.interface';
import type { LogKeys } from './log-keys';
import type { OpenTelemetryLockObserverOptions } from '../telemetry/lock-telemetry-options';

/** Options of `DistributedLockModule.forRoot` (and what a `forRootAsync` factory returns). */
export interface DistributedLockModuleOptions {
  /**
   * The strategies this application can lock with, by name, e.g.
   * `{ default: new InMemoryLockStrategy(), redis: new RedisLockStrategy({ client }) }`.
   * The module closes each strategy at shutdown; a strategy never closes a client you passed to it.
   */
  readonly strategies: Readonly<Record<string, LockStrategy>>;
  /**
   * Name of the strategy used where none is named. Default: "default" if registered, else the only one. With
   * several strategies and none named "default" there is no default: a `@Locked`, `@ScheduledLock`,
   * `forFeature` or injected `LockService` that names no strategy then fails the bootstrap, naming itself.
   */
  readonly defaultStrategy?: string;
  /** Prefix for every key of the application, e.g. "shop:". Default "". */
  readonly keyPrefix?: string;
  /** Defaults for every acquisition (ttl, waitTimeout, retry, reentrant, mode, autoExtend). */
  readonly defaults?: LockDefaults;
  /** Bound of one server call, in ms. Default 5 000. */
  readonly operationTimeout?: number;
  /**
   * Names this instance of the app (the pod name, say: `process.env.HOSTNAME` on Kubernetes) in the owner id
   * of every acquisition, after the host and pid, so that `LockService.query` and the lock board show it.
   * 1 to 64 letters, digits, dots, dashes or underscores. Default none.
   */
  readonly instanceName?: string;
  /**
   * Log lost locks (warn), background failures (error) and skipped `@ScheduledLock` runs (debug, once per
   * job a minute at most: every skip is still a `skipped` event of `ScheduledLockEvents`) through Nest's
   * Logger. Default true.
   */
  readonly logEvents?: boolean;
  /**
   * How those log lines show lock keys, which can carry user data: `'plain'` (default) or `'hashed'`
   * (`key#` and the first 16 hex digits of the key's SHA-256, as spans' `lock.key.hash`, also inside a quoted error message). Errors
   * and events keep the key itself.
   */
  readonly logKeys?: LogKeys;
  /**
   * Traces and metrics of every lock: a span per acquisition (the wait) and per hold, histograms of wait
   * and hold time, counters of acquisitions, losses, extensions and background errors (names and
   * attributes: docs/observability.md). `true` reports through OpenTelemetry (`@opentelemetry/api`, an
   * optional peer: your SDK decides where it goes) and through NestJS Observe when its module is
   * registered; an object says how. Default false: nothing is recorded and `@opentelemetry/api` is not loaded.
   */
  readonly telemetry?: boolean | DistributedLockTelemetryOptions;
}

/** How `DistributedLockModule` reports its locks (`telemetry`). */
export interface DistributedLockTelemetryOptions extends OpenTelemetryLockObserverOptions {
  /** Report through OpenTelemetry (`@opentelemetry/api` must be installed). Default true. */
  readonly openTelemetry?: boolean;
  /**
   * Report through NestJS Observe (`@nestjs/observe`) too: spans through its `TracerService`, inside the
   * request or job trace it records, and counts and durations as its custom metrics. Default: when its
   * module is registered in the application. `true` fails the bootstrap when it is not; `false` never reports there.
   */
  readonly observe?: boolean;
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
