import { Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { LeaderElection } from '../../election/leader-election';
import { validateLeaderElectionOptions, type LeaderElectionOptions } from '../../election/leader-election-options';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import type { LockService } from '../../locking/lock-service';
import { LockRegistry } from '../lock-registry';

interface Registered {
  readonly election: LeaderElection;
  /** Strategy, key prefix and options, to refuse the same name registered twice differently. */
  readonly signature: string;
}

/**
 * The application's leader elections, one per name, registered by `DistributedLockModule.forFeature({
 * elections })`. Every election campaigns from application bootstrap and resigns before shutdown (before
 * the lock strategies close). Inject it to list or look up elections by name.
 */
@Injectable()
export class LeaderElections implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly byName = new Map<string, Registered>();
  private readonly logger = new Logger('DistributedLock');
  private bootstrapped = false;

  constructor(private readonly registry: LockRegistry) {}

  /** Every registered election. */
  get all(): readonly LeaderElection[] {
    return [...this.byName.values()].map((entry) => entry.election);
  }

  /** The election registered under `name`, if any. */
  get(name: string): LeaderElection | undefined {
    return this.byName.get(name)?.election;
  }

  /**
   * @internal The election of `options.name` on a feature module's lock service (its strategy and prefix):
   * created once, the same instance for every module that registers it alike; a second registration that
   * differs (another strategy, prefix, lease) fails the bootstrap.
   */
  register(options: LeaderElectionOptions, service: LockService, usedBy: string): LeaderElection {
    const resolved = validateLeaderElectionOptions(options, `${usedBy} elections`);
    const signature = JSON.stringify([service.strategyName, service.prefix, resolved.ttl, resolved.retry]);
    const known = this.byName.get(resolved.name);
    if (known) {
      if (known.signature !== signature) {
        throw new InvalidLockOptionsError(
          `${usedBy} elections.${resolved.name}`,
          'an election of this name is already registered with another strategy, key prefix, ttl or retry; one name is one election: register it alike, or give it another name.',
        );
      }
      return known.election;
    }
    const election = new LeaderElection(service, resolved);
    election.traceWith(this.registry.rootSpans);
    if (this.registry.logsEvents) this.logEvents(election);
    this.byName.set(resolved.name, { election, signature });
    if (this.bootstrapped) election.start();
    return election;
  }

  onApplicationBootstrap(): void {
    this.bootstrapped = true;
    for (const election of this.all) election.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await Promise.all(this.all.map((election) => election.close()));
  }

  private logEvents(election: LeaderElection): void {
    const where = (): string => `election "${election.name}" (strategy "${election.strategyName}")`;
    election.events.on('gained', (event) => this.logger.log(`Leading ${where()}${event.term === undefined ? '' : `, term ${event.term}`}`));
    election.events.on('lost', (event) => {
      const line = `No longer leading ${where()} after ${event.heldMs} ms: ${event.reason}`;
      if (event.reason === 'lock-lost') this.logger.warn(line);
      else this.logger.log(line);
    });
    election.events.on('campaignError', (event) =>
      this.logger.error(
        this.registry.logLine(`Campaign of ${where()} failed${event.retryInMs > 0 ? `, trying again in ${event.retryInMs} ms` : ''}: ${String(event.error)}`, keyOf(event.error)),
      ),
    );
  }
}

/** The lock key a library error carries (its message quotes it), if any. */
function keyOf(error: unknown): string | undefined {
  const key = (error as { key?: unknown } | null)?.key;
  return typeof key === 'string' ? key : undefined;
}
