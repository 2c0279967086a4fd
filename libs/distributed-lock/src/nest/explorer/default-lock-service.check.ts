import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { StrategyNotRegisteredError } from '../../errors/strategy-not-registered.error';
import { LockService } from '../../locking/lock-service';
import { DEFAULT_STRATEGY_NAME } from '../distributed-lock.constants';
import { LockRegistry } from '../lock-registry';

/**
 * With several strategies and none registered as "default", the application's `LockService` has no strategy
 * to lock on (see `lockServiceWithoutDefault`). A class that injects it fails the bootstrap here, named, as
 * a `@Locked` method without a strategy does in the explorer, instead of at its first lock.
 */
@Injectable()
export class DefaultLockServiceCheck implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly registry: LockRegistry,
    @Inject(LockService) private readonly rootService: LockService,
  ) {}

  onModuleInit(): void {
    if (this.registry.defaultStrategy !== undefined) return;
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      const instance: unknown = wrapper.instance;
      if (!instance || typeof instance !== 'object' || instance === this || wrapper.isAlias) continue;
      // Constructor parameters become properties (`private readonly locks: LockService`): a cheap scan, made
      // only in applications without a default.
      if (!Object.values(instance).includes(this.rootService)) continue;
      throw new StrategyNotRegisteredError(DEFAULT_STRATEGY_NAME, this.registry.names, `${wrapper.name?.toString() ?? 'A provider'}, which injects LockService,`, true);
    }
  }
}
