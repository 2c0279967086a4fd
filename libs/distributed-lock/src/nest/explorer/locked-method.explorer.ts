import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { toKeyResolver } from '../../locking/key-template';
import { validateLockKey } from '../../locking/lock-key';
import { validateAcquireOptions } from '../../locking/lock-options';
import { validatePermitOptions, type PermitOptions } from '../../locking/permit-options';
import { InvalidLockKeyError } from '../../errors/invalid-lock-key.error';
import type { LimitedOptions } from '../decorators/limited.decorator';
import { runWithOptimisticRetry, validateOptimisticRetryOptions } from '../../versioning/optimistic-retry';
import { lockServiceOf, type DistributedLockFeature } from '../distributed-lock-feature';
import { LockRegistry } from '../lock-registry';
import { copyMethodMetadata } from './copy-method-metadata';
import { providerMethods, type DiscoveredWrapper } from './provider-methods';
import { LockMetadataAccessor } from './lock-metadata.accessor';
import { ModuleFeatures } from './module-features';
import { ScheduledLockBinder } from '../scheduling/scheduled-lock.binder';
import { warmUpStrategies } from '../scheduling/warm-up-strategies';

type AnyMethod = (this: unknown, ...args: unknown[]) => unknown;

/**
 * Finds `@Locked`, `@Limited`, `@OptimisticVersion` and `@ScheduledLock` methods on every provider once the application
 * starts, and wraps them on the instance (the prototype is left alone, so two apps in one process never
 * interfere; a `@ScheduledLock` dispatcher on the class sends each call to its instance's wrapper). A method
 * locks through its module's `forFeature` service (the one its class is injected), else the application's.
 * Mistakes fail the bootstrap naming `Class#method`: an unknown strategy, a malformed key template or
 * option, a controller or a request-scoped provider (where a wrapper could not be applied reliably).
 */
@Injectable()
export class LockedMethodExplorer implements OnModuleInit {
  /** The registered names of the strategies `@ScheduledLock` jobs lock through. */
  private readonly scheduledStrategies = new Set<string>();

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly accessor: LockMetadataAccessor,
    private readonly registry: LockRegistry,
    private readonly scheduledLocks: ScheduledLockBinder,
    private readonly features: ModuleFeatures,
  ) {}

  async onModuleInit(): Promise<void> {
    for (const wrapper of this.discovery.getProviders()) this.explore(wrapper, false);
    for (const wrapper of this.discovery.getControllers()) this.explore(wrapper, true);
    // Awaited here, before any module's onApplicationBootstrap, where @nestjs/schedule starts the jobs:
    // a job's first fire must not be the one that connects (see warmUpStrategies).
    await warmUpStrategies(this.registry, this.scheduledStrategies);
  }

  private explore(wrapper: DiscoveredWrapper, isController: boolean): void {
    for (const { instance, methodName, method, where } of providerMethods(wrapper, this.scanner)) {
      const locked = this.accessor.locked(method);
      const limited = this.accessor.limited(method);
      const optimistic = this.accessor.optimisticVersion(method);
      const scheduled = this.accessor.scheduledLock(method);
      if (!locked && !limited && !optimistic && !scheduled) continue;
      if (scheduled && limited) {
        throw new InvalidLockOptionsError(where, '@ScheduledLock runs a job once per cluster already; a semaphore around it limits nothing. Remove @Limited.');
      }
      if (scheduled && locked) {
        throw new InvalidLockOptionsError(where, '@ScheduledLock already runs the method under a lock; remove @Locked (call assertLocked() inside if the body must check).');
      }
      if ((locked || limited) && this.accessor.schedule(method)) {
        throw new InvalidLockOptionsError(
          where,
          `${locked ? '@Locked' : '@Limited'} on a @Cron/@Interval/@Timeout method: @nestjs/schedule may take the method before it is wrapped, and would run it unguarded. ` +
            'Use @ScheduledLock({ lockAtMostFor }) instead: it skips a fire that another instance runs.',
        );
      }
      // A scheduled job is called through its dispatcher, not a route binding: it may sit on a controller.
      if (isController && (locked || limited || optimistic)) {
        throw new InvalidLockOptionsError(
          where,
          '@Locked/@Limited/@OptimisticVersion are applied to providers only: Nest binds controller handlers before modules initialise. Move the locked work into a service method.',
        );
      }
      if (!wrapper.isDependencyTreeStatic() || !instance) {
        throw new InvalidLockOptionsError(
          where,
          'the provider is request- or transient-scoped, so its method cannot be wrapped at bootstrap. Make it a singleton, or call LockService.withLock (withPermit) inside the method.',
        );
      }
      const feature = this.features.of(wrapper, where);
      // A @ScheduledLock method is a dispatcher on the class: the method as written is in its metadata.
      let wrapped = scheduled?.method ?? (method as AnyMethod);
      if (locked) wrapped = this.wrapLocked(wrapped, locked, feature, where);
      // The permit is taken first: a call waiting for its turn holds no lock meanwhile.
      if (limited) wrapped = this.wrapLimited(wrapped, limited, feature, where);
      if (optimistic) wrapped = this.wrapOptimistic(wrapped, optimistic, where);
      if (scheduled) {
        wrapped = this.scheduledLocks.wrap(wrapped, scheduled, method, feature, where);
        this.scheduledStrategies.add(lockServiceOf(this.registry, feature, scheduled.options.strategy as string | undefined, where).strategyName);
      }
      copyMethodMetadata(method, wrapped);
      Object.defineProperty(instance, methodName, { value: wrapped, configurable: true, writable: true, enumerable: false });
    }
  }

  private wrapLocked(
    method: AnyMethod,
    metadata: NonNullable<ReturnType<LockMetadataAccessor['locked']>>,
    feature: DistributedLockFeature | undefined,
    where: string,
  ): AnyMethod {
    const { strategy, ...acquireOptions } = metadata.options;
    const options = validateAcquireOptions(acquireOptions, `${where} @Locked options`);
    const service = lockServiceOf(this.registry, feature, strategy, where);
    const resolveKeys = toKeyResolver(metadata.key, `${where} @Locked key`);
    // A fixed key must also fit with the prefix the service puts before it.
    for (const fixed of typeof metadata.key === 'function' ? [] : [metadata.key].flat()) {
      if (!fixed.includes('{')) validateLockKey(service.prefix + fixed, `${where} @Locked key with its prefix "${service.prefix}"`);
    }
    return function lockedMethod(this: unknown, ...args: unknown[]): Promise<unknown> {
      // Resolving may throw InvalidLockKeyError; the rejection reaches the caller like any other.
      return Promise.resolve()
        .then(() => resolveKeys(args))
        .then((keys) => service.withLock(keys, () => method.apply(this, args), options));
    };
  }

  private wrapLimited(
    method: AnyMethod,
    metadata: NonNullable<ReturnType<LockMetadataAccessor['limited']>>,
    feature: DistributedLockFeature | undefined,
    where: string,
  ): AnyMethod {
    const { strategy, ...permitOptions } = metadata.options ?? ({} as LimitedOptions);
    const options = validatePermitOptions(permitOptions, `${where} @Limited options`);
    const checked: PermitOptions = { ...options.acquire, permits: options.permits, weight: options.weight };
    const service = lockServiceOf(this.registry, feature, strategy, where);
    if (!service.capabilities.semaphores) {
      throw new InvalidLockOptionsError(
        where,
        `@Limited needs a strategy with semaphores; "${service.strategyName}" (${service.backendName}) has none. Name one in @Limited({ strategy }).`,
      );
    }
    if (Array.isArray(metadata.key)) throw new InvalidLockOptionsError(where, '@Limited takes one semaphore key (a template or a function), not an array.');
    const resolveKey = toKeyResolver(metadata.key, `${where} @Limited key`);
    if (typeof metadata.key === 'string' && !metadata.key.includes('{')) {
      validateLockKey(service.prefix + metadata.key, `${where} @Limited key with its prefix "${service.prefix}"`);
    }
    return function limitedMethod(this: unknown, ...args: unknown[]): Promise<unknown> {
      return Promise.resolve()
        .then(() => {
          const key = resolveKey(args);
          if (typeof key !== 'string') throw new InvalidLockKeyError(String(key), `${where} @Limited key: the key function must return one string`);
          return key;
        })
        .then((key) => service.withPermit(key, () => method.apply(this, args), checked));
    };
  }

  private wrapOptimistic(method: AnyMethod, options: NonNullable<ReturnType<LockMetadataAccessor['optimisticVersion']>>, where: string): AnyMethod {
    const checked = validateOptimisticRetryOptions(options, `${where} @OptimisticVersion options`);
    return function optimisticMethod(this: unknown, ...args: unknown[]): Promise<unknown> {
      return runWithOptimisticRetry(() => method.apply(this, args), checked);
    };
  }
}
