import { Injectable } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import type { DistributedLockFeature } from '../distributed-lock-feature';
import { DISTRIBUTED_LOCK_FEATURE } from '../distributed-lock.tokens';
import type { DiscoveredWrapper } from './provider-methods';

type NestModule = NonNullable<DiscoveredWrapper['host']>;

/**
 * The `forFeature` registration that the module declaring a provider imports: the very provider that
 * registration's module holds (its `LockService` is the one the module injects), found among the
 * providers `DiscoveryService` lists. Only a direct import counts, as a module's `@Locked` methods have
 * always read it; two of them fail the bootstrap.
 */
@Injectable()
export class ModuleFeatures {
  /** Each `forFeature` module's registration, by the module that provides it. */
  private byModule?: Map<NestModule, DistributedLockFeature>;

  constructor(private readonly discovery: DiscoveryService) {}

  /** The registration of `wrapper`'s module, if it imports one; fails naming `where` when it imports several. */
  of(wrapper: DiscoveredWrapper, where: string): DistributedLockFeature | undefined {
    if (!wrapper.host) return undefined;
    const registrations = this.registrations();
    const imported = [...wrapper.host.imports].map((module) => registrations.get(module)).filter((feature) => feature !== undefined);
    if (imported.length > 1) {
      throw new InvalidLockOptionsError(
        where,
        `its module imports DistributedLockModule.forFeature ${imported.length} times; import it once per module, or name the strategy in @Locked({ strategy }).`,
      );
    }
    return imported[0];
  }

  private registrations(): Map<NestModule, DistributedLockFeature> {
    if (!this.byModule) {
      this.byModule = new Map();
      for (const provider of this.discovery.getProviders()) {
        if (provider.token === DISTRIBUTED_LOCK_FEATURE && provider.host) this.byModule.set(provider.host, provider.instance as DistributedLockFeature);
      }
    }
    return this.byModule;
  }
}
