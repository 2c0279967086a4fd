import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { LeaderElection } from '../../election/leader-election';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import type { LeadershipHookMetadata } from '../decorators/leadership-hooks.decorator';
import { LeaderElections } from '../election/leader-elections';
import { LockMetadataAccessor } from './lock-metadata.accessor';
import { providerMethods, type DiscoveredWrapper } from './provider-methods';

type Hook = (this: unknown, event: unknown) => unknown;

/**
 * Finds `@OnLeadershipGained` / `@OnLeadershipLost` methods on every singleton provider and calls them on
 * their election's events. A hook naming an election nobody registered, or a hook on a request-scoped
 * provider, fails the bootstrap naming `Class#method`.
 */
@Injectable()
export class LeadershipHookExplorer implements OnModuleInit {
  private readonly logger = new Logger('DistributedLock');

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly accessor: LockMetadataAccessor,
    private readonly elections: LeaderElections,
  ) {}

  onModuleInit(): void {
    for (const wrapper of this.discovery.getProviders()) this.explore(wrapper);
  }

  private explore(wrapper: DiscoveredWrapper): void {
    for (const { instance, method, where } of providerMethods(wrapper, this.scanner)) {
      const gained = this.accessor.leadershipGained(method);
      const lost = this.accessor.leadershipLost(method);
      if (!gained && !lost) continue;
      if (!wrapper.isDependencyTreeStatic() || !instance) {
        throw new InvalidLockOptionsError(where, 'leadership hooks are called on singleton providers only; make the provider a singleton.');
      }
      const call = (event: unknown): void => this.call(where, () => (method as Hook).call(instance, event));
      if (gained) for (const election of this.electionsOf(gained, where)) election.events.on('gained', call);
      if (lost) for (const election of this.electionsOf(lost, where)) election.events.on('lost', call);
    }
  }

  private electionsOf(hook: LeadershipHookMetadata, where: string): readonly LeaderElection[] {
    if (hook.election === undefined) {
      if (this.elections.all.length === 0) {
        throw new InvalidLockOptionsError(where, 'a leadership hook, but no election is registered: add DistributedLockModule.forFeature({ elections: ["name"] }).');
      }
      return this.elections.all;
    }
    const election = this.elections.get(hook.election);
    if (!election) {
      const known = this.elections.all.map((e) => `"${e.name}"`).join(', ') || 'none';
      throw new InvalidLockOptionsError(
        where,
        `no election named "${hook.election}" is registered (registered: ${known}). Add DistributedLockModule.forFeature({ elections: ["${hook.election}"] }), or fix the name.`,
      );
    }
    return [election];
  }

  /** Runs a hook; a failure (thrown or rejected) is logged, never left unhandled. */
  private call(where: string, run: () => unknown): void {
    const report = (error: unknown): void => this.logger.error(`Leadership hook ${where} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    try {
      const result = run();
      if (result instanceof Promise) result.catch(report);
    } catch (error) {
      report(error);
    }
  }
}
