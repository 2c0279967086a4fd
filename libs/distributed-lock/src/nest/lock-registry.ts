import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import { StrategyNotRegisteredError } from '../errors/strategy-not-registered.error';
import { LockManager } from '../locking/lock-manager';
import type { LockObserver } from '../locking/lock-observer';
import { LockService } from '../locking/lock-service';
import { ScheduledLockEvents } from '../scheduling/scheduled-lock-events';
import { LockObservers } from '../telemetry/lock-observers';
import { OpenTelemetryLockObserver } from '../telemetry/open-telemetry-lock-observer';
import { OpenTelemetryRootSpans, type RootSpans } from '../telemetry/root-spans';
import { DEFAULT_STRATEGY_NAME } from './distributed-lock.constants';
import { hideKeyInError, keysForLog } from './log-keys';
import { SkippedRunLog } from './scheduling/skipped-run-log';
import type { DistributedLockFeatureOptions, DistributedLockModuleOptions, DistributedLockTelemetryOptions } from './distributed-lock-options.interface';
import { validateTelemetryOption } from './validate-distributed-lock-options';

/**
 * The application's lock managers, one per registered strategy, and the lock services built on them.
 * Created once per application by `DistributedLockModule`; closes every strategy at shutdown.
 */
export class LockRegistry implements OnApplicationShutdown {
  private readonly managers = new Map<string, LockManager>();
  private readonly logger = new Logger('DistributedLock');
  /** Name of the strategy used where none is named; undefined when several are registered and none as "default". */
  readonly defaultStrategy: string | undefined;
  private readonly root: Map<string, LockService> = new Map();
  /** Events of the application's `@ScheduledLock` jobs (injectable as `ScheduledLockEvents`). */
  readonly scheduledLockEvents = new ScheduledLockEvents();
  /** The module's `telemetry`, as options; undefined when it is off. */
  readonly telemetry: DistributedLockTelemetryOptions | undefined;
  /** What reports the locks, when `telemetry` is on. */
  private readonly observers: LockObservers | undefined;
  /**
   * @internal With `telemetry` on (through OpenTelemetry): the root spans of scheduled runs and election
   * campaigns, one trace per run and per term.
   */
  readonly rootSpans: RootSpans | undefined;
  /** The scheduled-job locks taken so far, by strategy and full key: which method each belongs to. */
  private readonly scheduledJobs = new Map<string, { method: object; where: string }>();

  constructor(private readonly options: DistributedLockModuleOptions & { defaultStrategy: string | undefined }) {
    this.defaultStrategy = options.defaultStrategy;
    this.telemetry = validateTelemetryOption(options.telemetry);
    if (this.telemetry) {
      const { tracerProvider, meterProvider, key } = this.telemetry;
      this.observers = new LockObservers(this.telemetry.openTelemetry === false ? [] : [new OpenTelemetryLockObserver({ tracerProvider, meterProvider, key })]);
      if (this.telemetry.openTelemetry !== false) this.rootSpans = new OpenTelemetryRootSpans(tracerProvider);
    }
    for (const [name, strategy] of Object.entries(options.strategies)) {
      // Errors and events name the strategy as the application registered it ("orders"), not by its kind ("database").
      const manager = new LockManager(strategy, { operationTimeout: options.operationTimeout, instanceName: options.instanceName, name, observer: this.observers });
      if (options.logEvents ?? true) this.logEvents(name, manager);
      this.managers.set(name, manager);
      this.root.set(name, new LockService(manager, { keyPrefix: options.keyPrefix, defaults: options.defaults }));
    }
    if (this.logsEvents) {
      // A skip is routine (another instance runs the job): one debug line per job a minute at most.
      const skips = new SkippedRunLog();
      this.scheduledLockEvents.on('skipped', (event) => {
        const count = skips.skipped(`${event.strategy}\u0000${event.job}`);
        if (count === undefined) return;
        const times = count === 1 ? '' : ` ${count} times since its last line`;
        this.logger.debug(
          this.logLine(
            `Scheduled job "${event.job}" skipped${times}: its lock "${event.key}" (strategy "${event.strategy}") is held by another instance ` +
              '(a job\'s skips are logged once a minute at most)',
            event.key,
          ),
        );
      });
    }
  }

  /** Whether lock, scheduled-job and election events are logged (`logEvents`). */
  get logsEvents(): boolean {
    return this.options.logEvents ?? true;
  }

  /** @internal A log line with `key` (and the key an error in it carries) shown as `logKeys` says. */
  logLine(line: string, key: string | undefined): string {
    return keysForLog(line, key, this.options.logKeys ?? 'plain');
  }

  /** @internal `error` as others may log it: the key it carries written as `logKeys` says (see `hideKeyInError`). */
  forLog(error: unknown): unknown {
    return hideKeyInError(error, this.options.logKeys ?? 'plain');
  }

  /**
   * @internal Adds an observer of every strategy's locks (the module adds NestJS Observe's once the application's
   * providers exist). Ignored when `telemetry` is off.
   */
  addObserver(observer: LockObserver): void {
    this.observers?.add(observer);
  }

  /** Registered strategy names. */
  get names(): readonly string[] {
    return [...this.managers.keys()];
  }

  /** The manager of a strategy (default: the default one); throws `StrategyNotRegisteredError` naming `usedBy` when unknown. */
  manager(strategy?: string, usedBy?: string): LockManager {
    const name = this.nameOf(strategy, usedBy);
    const manager = this.managers.get(name);
    if (!manager) throw new StrategyNotRegisteredError(name, this.names, usedBy);
    return manager;
  }

  /** The lock service of a strategy, with a feature module's prefix and defaults applied. */
  service(feature: DistributedLockFeatureOptions = {}, usedBy?: string): LockService {
    const name = this.nameOf(feature.strategy, usedBy);
    const root = this.root.get(name);
    if (!root) throw new StrategyNotRegisteredError(name, this.names, usedBy);
    return feature.keyPrefix || feature.defaults ? root.withOptions({ keyPrefix: feature.keyPrefix, defaults: feature.defaults }) : root;
  }

  /** `strategy`, else the default's name; throws `StrategyNotRegisteredError` naming `usedBy` when there is no default. */
  private nameOf(strategy: string | undefined, usedBy: string | undefined): string {
    const name = strategy ?? this.defaultStrategy;
    if (name === undefined) throw new StrategyNotRegisteredError(DEFAULT_STRATEGY_NAME, this.names, usedBy, true);
    return name;
  }

  async onApplicationShutdown(): Promise<void> {
    const results = await Promise.allSettled([...this.managers.values()].map((manager) => manager.close()));
    for (const result of results) {
      if (result.status === 'rejected') this.logger.error(`Closing a lock strategy failed: ${String(result.reason)}`);
    }
  }

  private logEvents(name: string, manager: LockManager): void {
    manager.events.on('lost', (event) =>
      this.logger.warn(this.logLine(`Lock "${event.key}" (strategy "${name}") lost after ${event.heldMs} ms: ${event.reason}`, event.key)),
    );
    manager.events.on('broken', (event) =>
      this.logger.warn(
        this.logLine(
          `Lock "${event.key}" (strategy "${name}") broken by an operator (${event.reason}): ${event.owners ? `${event.owners.length} hold(s) ended, ${event.owners.join(', ')}` : `the break failed on its way, ${String(event.error)}`}`,
          event.key,
        ),
      ),
    );
    manager.events.on('backgroundError', (event) =>
      this.logger.error(this.logLine(`Background ${event.operation} of "${event.key}" (strategy "${name}") failed: ${String(event.error)}`, event.key)),
    );
  }

  /**
   * @internal Records that `method` (at `where`) runs under the scheduled-job lock `key` of `strategy`. Two different
   * methods under one lock would skip each other's runs without a word: that fails the bootstrap. The same
   * method found twice (a class provided in two modules) shares its lock on purpose.
   */
  claimScheduledJob(strategy: string, key: string, method: object, where: string): void {
    const id = `${strategy}\u0000${key}`;
    const claimed = this.scheduledJobs.get(id);
    if (!claimed) {
      this.scheduledJobs.set(id, { method, where });
      return;
    }
    if (claimed.method === method) return;
    throw new InvalidLockOptionsError(
      `${where} @ScheduledLock`,
      `its lock "${key}" on strategy "${strategy}" is also ${claimed.where}'s, so one job would skip the other's runs. ` +
        'Give one of them its own name: @ScheduledLock({ name: "…" }).',
    );
  }
}
