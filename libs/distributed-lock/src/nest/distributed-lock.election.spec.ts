import 'reflect-metadata';
import { Injectable, Module, type DynamicModule, type Type } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import type { LeaderElection } from '../election/leader-election';
import type { LeadershipGainedEvent, LeadershipLostEvent } from '../election/leader-election-events';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import type { LockStrategy } from '../locking/lock-strategy.interface';
import { InMemoryLockStrategy } from '../strategies/in-memory/in-memory-lock.strategy';
import { InjectLeaderElection } from './decorators/inject-leader-election.decorator';
import { OnLeadershipGained, OnLeadershipLost } from './decorators/leadership-hooks.decorator';
import { DistributedLockModule } from './distributed-lock.module';
import { getLeaderElectionToken } from './distributed-lock.tokens';
import { LeaderElections } from './election/leader-elections';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function clientOf(server: InMemoryLockStrategy): LockStrategy {
  return new Proxy(server, { get: (target, property) => (property === 'close' ? async () => undefined : Reflect.get(target, property, target)) });
}

async function until(condition: () => boolean, timeoutMs = 2_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(5);
  }
}

/** One application instance: a billing module with the "billing" election, and hooks that log. */
function instance(server: InMemoryLockStrategy, log: string[], name: string): { imports: Array<Type | DynamicModule>; Billing: Type } {
  @Injectable()
  class Billing {
    work: AbortSignal | undefined;
    constructor(@InjectLeaderElection('billing') readonly election: LeaderElection) {}

    @OnLeadershipGained('billing')
    start(event: LeadershipGainedEvent): void {
      this.work = event.signal;
      log.push(`${name} gained ${event.election} ${event.term}`);
    }

    @OnLeadershipLost()
    stop(event: LeadershipLostEvent): void {
      log.push(`${name} lost ${event.election} ${event.term} ${event.reason}`);
    }
  }
  @Module({ imports: [DistributedLockModule.forFeature({ strategy: 'shared', elections: [{ name: 'billing', ttl: 500 }] })], providers: [Billing] })
  class BillingModule {}
  return {
    imports: [DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy(), shared: clientOf(server) } }), BillingModule],
    Billing,
  };
}

async function boot(imports: Array<Type | DynamicModule>, providers: Type[] = []): Promise<TestingModule> {
  const app = await Test.createTestingModule({ imports, providers }).compile();
  await app.init();
  return app;
}

describe('leader elections in Nest', () => {
  it('campaigns from bootstrap, calls the hooks, and hands over when the leader shuts down', async () => {
    const server = new InMemoryLockStrategy();
    const log: string[] = [];
    const a = instance(server, log, 'a');
    const appA = await boot(a.imports);
    await until(() => log.length === 1);
    const b = instance(server, log, 'b');
    const appB = await boot(b.imports);
    const billingA = appA.get(a.Billing);
    const electionB = appB.get<LeaderElection>(getLeaderElectionToken('billing'), { strict: false });
    expect(billingA.election.isLeader).toBe(true);
    expect(electionB.isLeader).toBe(false);
    expect(electionB.isCampaigning).toBe(true);
    expect(appA.get(LeaderElections).get('billing')).toBe(billingA.election);
    const termA = billingA.election.term as number;
    await appA.close(); // resigns before the strategies close
    expect(billingA.work?.aborted).toBe(true);
    await until(() => electionB.isLeader);
    expect(electionB.term).toBeGreaterThan(termA);
    expect(log).toEqual([`a gained billing ${termA}`, `a lost billing ${termA} closed`, `b gained billing ${electionB.term}`]);
    await appB.close();
    expect(electionB.isCampaigning).toBe(false);
  });

  it('fails at bootstrap on a hook naming an unregistered election, and on one name registered two ways', async () => {
    @Injectable()
    class Hooked {
      @OnLeadershipGained('missing')
      gained(): void {}
    }
    const root = DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy(), other: new InMemoryLockStrategy() } });
    const unknown = await boot([root, DistributedLockModule.forFeature({ elections: ['present'] })], [Hooked]).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(InvalidLockOptionsError);
    expect(String(unknown)).toMatch(/Hooked#gained.*"missing".*"present"/);

    @Module({ imports: [DistributedLockModule.forFeature({ elections: ['jobs'] })] })
    class One {}
    @Module({ imports: [DistributedLockModule.forFeature({ strategy: 'other', elections: ['jobs'] })] })
    class Two {}
    const twice = await boot([DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy(), other: new InMemoryLockStrategy() } }), One, Two]).catch(
      (e: unknown) => e,
    );
    expect(String(twice)).toMatch(/elections\.jobs.*already registered/);
  });

  it('refuses malformed elections when the module is declared', () => {
    expect(() => DistributedLockModule.forFeature({ elections: ['a', 'a'] })).toThrow(/listed twice/);
    expect(() => DistributedLockModule.forFeature({ elections: [{ name: 'a', ttl: -1 }] })).toThrow(InvalidLockOptionsError);
    expect(() => DistributedLockModule.forFeature({ elections: 'a' as unknown as string[] })).toThrow(/expected an array/);
  });
});
