import { Global, Module, type DynamicModule, type FactoryProvider, type Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { LockService } from '../locking/lock-service';
import { ScheduledLockEvents } from '../scheduling/scheduled-lock-events';
import { ScheduledLockBinder } from './scheduling/scheduled-lock.binder';
import type { DistributedLockFeatureOptions, DistributedLockModuleOptions } from './distributed-lock-options.interface';
import {
  ConfigurableDistributedLockModule,
  DISTRIBUTED_LOCK_ASYNC_OPTIONS_TYPE,
  DISTRIBUTED_LOCK_MODULE_OPTIONS,
  DISTRIBUTED_LOCK_OPTIONS_TYPE,
} from './distributed-lock.module-definition';
import { DistributedLockFeature } from './distributed-lock-feature';
import { DISTRIBUTED_LOCK_FEATURE, getLeaderElectionToken, getLockServiceToken } from './distributed-lock.tokens';
import { LeaderElections } from './election/leader-elections';
import { LeadershipHookExplorer } from './explorer/leadership-hook.explorer';
import { DistributedLockFeatureModule } from './explorer/distributed-lock-feature.module';
import { LockedMethodExplorer } from './explorer/locked-method.explorer';
import { LockMetadataAccessor } from './explorer/lock-metadata.accessor';
import { ModuleFeatures } from './explorer/module-features';
import { DefaultLockServiceCheck } from './explorer/default-lock-service.check';
import { LockRegistry } from './lock-registry';
import { lockServiceWithoutDefault } from './lock-service-without-default';
import { ObserveTelemetryBinder } from './telemetry/observe-telemetry.binder';
import { lockOperationsController } from './operations/lock-operations.controller';
import { DistributedLockOperationsModule, LOCK_OPERATIONS_ROUTE } from './operations/lock-operations.module';
import { validateLockOperationsOptions, type LockOperationsOptions } from './operations/lock-operations-options';
import { assertAsyncOptionsGiven, assertOptionsGiven, validateDistributedLockOptions, validateFeatureOptions } from './validate-distributed-lock-options';

/**
 * Distributed locks for a Nest application.
 *
 * - `forRoot(options)` / `forRootAsync({ useFactory | useClass | useExisting, inject, imports, extraProviders })`
 *   once, in the root module: registers the strategies. Global: `LockService` (default strategy) is
 *   injectable everywhere.
 * - `forFeature({ strategy, keyPrefix, elections })` in a feature module: that module's `LockService`,
 *   its `@Locked` and `@ScheduledLock` methods use that strategy and prefix; each named election is
 *   injectable there with `@InjectLeaderElection(name)`.
 */
@Global()
@Module({
  imports: [DiscoveryModule],
  providers: [
    {
      provide: LockRegistry,
      useFactory: (options: DistributedLockModuleOptions) => new LockRegistry(validateDistributedLockOptions(options)),
      inject: [DISTRIBUTED_LOCK_MODULE_OPTIONS],
    },
    {
      provide: LockService,
      // Without a default strategy the provider still exists (Nest makes every provider): injecting it fails the bootstrap.
      useFactory: (registry: LockRegistry) => (registry.defaultStrategy === undefined ? lockServiceWithoutDefault(registry.names) : registry.service()),
      inject: [LockRegistry],
    },
    { provide: ScheduledLockEvents, useFactory: (registry: LockRegistry) => registry.scheduledLockEvents, inject: [LockRegistry] },
    LockMetadataAccessor,
    ModuleFeatures,
    ScheduledLockBinder,
    LockedMethodExplorer,
    LeaderElections,
    LeadershipHookExplorer,
    ObserveTelemetryBinder,
    DefaultLockServiceCheck,
  ],
  exports: [LockRegistry, LockService, ScheduledLockEvents, LeaderElections],
})
export class DistributedLockModule extends ConfigurableDistributedLockModule {
  /** The module with `options`: the strategies, and the defaults of every lock. */
  static forRoot(options: typeof DISTRIBUTED_LOCK_OPTIONS_TYPE): DynamicModule {
    // Checked before Nest's builder reads the object: without it, a missing argument is Nest's untyped TypeError.
    assertOptionsGiven(options);
    return super.forRoot(options);
  }

  /** The module with options made by a factory, a class or an existing provider (`useFactory | useClass | useExisting`). */
  static forRootAsync(options: typeof DISTRIBUTED_LOCK_ASYNC_OPTIONS_TYPE): DynamicModule {
    assertAsyncOptionsGiven(options);
    return super.forRootAsync(options);
  }

  /**
   * A feature module's lock service: its own strategy and key prefix. The one `LockService` it builds is the
   * module's `LockService`, its `@InjectLockService(strategy)` and the service of its `@Locked` and
   * `@ScheduledLock` methods.
   */
  static forFeature(options: DistributedLockFeatureOptions = {}): DynamicModule {
    const feature = validateFeatureOptions(options);
    const usedBy =
      feature.strategy === undefined
        ? `DistributedLockModule.forFeature(${feature.keyPrefix ? `{ keyPrefix: ${JSON.stringify(feature.keyPrefix)} }` : ''})`
        : `DistributedLockModule.forFeature(${JSON.stringify(feature.strategy)})`;
    const theFeatureService: Omit<FactoryProvider<LockService>, 'provide'> = {
      useFactory: (registered: DistributedLockFeature) => registered.service,
      inject: [DISTRIBUTED_LOCK_FEATURE],
    };
    const providers: Provider[] = [
      {
        provide: DISTRIBUTED_LOCK_FEATURE,
        useFactory: (registry: LockRegistry) => new DistributedLockFeature(feature, registry.service(feature, usedBy), registry),
        inject: [LockRegistry],
      },
      { provide: LockService, ...theFeatureService },
    ];
    const named = getLockServiceToken(feature.strategy);
    const exported: Array<string | symbol | typeof LockService> = [DISTRIBUTED_LOCK_FEATURE, LockService];
    if (named !== LockService) {
      providers.push({ provide: named, ...theFeatureService });
      exported.push(named);
    }
    for (const entry of feature.elections ?? []) {
      const options = typeof entry === 'string' ? { name: entry } : entry;
      const token = getLeaderElectionToken(options.name);
      providers.push({
        provide: token,
        useFactory: (elections: LeaderElections, registered: DistributedLockFeature) => elections.register(options, registered.service, usedBy),
        inject: [LeaderElections, DISTRIBUTED_LOCK_FEATURE],
      });
      exported.push(token);
    }
    return { module: DistributedLockFeatureModule, providers, exports: exported };
  }

  /**
   * The operator's endpoints, opt-in: `GET <path>?key=…` answers who holds each key and who waits (as
   * `LockService.query`), and with `allowBreak`, `POST <path>/break` ends a stuck lock (`breakLock`). Import
   * it where the application mounts its admin routes, behind your own `guards`; it is never mounted by
   * default. Keys are shown in the answers as the telemetry shows them (`keys`).
   */
  static operations(options?: LockOperationsOptions): DynamicModule {
    const resolved = validateLockOperationsOptions(options);
    return {
      module: DistributedLockOperationsModule,
      controllers: [lockOperationsController(resolved)],
      // Tells one registration from another (one per route) where Nest tells dynamic modules apart by their metadata.
      providers: [{ provide: LOCK_OPERATIONS_ROUTE, useValue: resolved.path }],
    };
  }
}
