import { InvalidLockKeyError } from '../errors/invalid-lock-key.error';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LeadershipLostError } from '../errors/leadership-lost.error';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error';
import { LockLostError } from '../errors/lock-lost.error';
import { LockManager } from '../locking/lock-manager';
import { LockService } from '../locking/lock-service';
import { InMemoryLockStrategy } from '../strategies/in-memory/in-memory-lock.strategy';
import { LeaderElection } from './leader-election';
import type { LeaderElectionOptions } from './leader-election-options';
import { withRenewalHook } from '../../../../test/support/renewal-hook';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** `count` processes' elections of one name, each with its own lock service on one shared in-memory "server". */
function cluster<S extends InMemoryLockStrategy>(count: number, options: Partial<LeaderElectionOptions> = {}, server: S = new InMemoryLockStrategy() as S) {
  const log: string[] = [];
  const elections = Array.from({ length: count }, (_, i) => {
    const election = new LeaderElection(new LockService(new LockManager(server)), { name: 'primary', ttl: 300, retry: { initialDelay: 20, maxDelay: 40 }, ...options });
    election.events.on('gained', (event) => log.push(`gained ${i} ${event.term}`));
    election.events.on('lost', (event) => log.push(`lost ${i} ${event.term} ${event.reason}`));
    return election;
  });
  const leaders = (): number[] => elections.flatMap((election, i) => (election.isLeader ? [i] : []));
  return { server, log, elections, leaders };
}

async function until(condition: () => boolean, timeoutMs = 2_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(5);
  }
}

describe('LeaderElection', () => {
  it('elects one leader among three, and a new one, with a higher term, after each resignation', async () => {
    const { elections, leaders, log } = cluster(3);
    for (const election of elections) election.start();
    await until(() => leaders().length === 1);
    const first = leaders()[0];
    const firstTerm = elections[first].term as number;
    const firstSignal = elections[first].signal;
    expect(firstSignal.aborted).toBe(false);
    await elections[first].resign();
    expect(firstSignal.aborted).toBe(true);
    expect(firstSignal.reason).toBeInstanceOf(LeadershipLostError);
    expect((firstSignal.reason as LeadershipLostError).reason).toBe('resigned');
    await until(() => leaders().length === 1);
    const second = leaders()[0];
    expect(second).not.toBe(first);
    expect(elections[second].term).toBeGreaterThan(firstTerm);
    // The old leader's term ended before the new one began.
    expect(log.indexOf(`lost ${first} ${firstTerm} resigned`)).toBeLessThan(log.indexOf(`gained ${second} ${elections[second].term}`));
    expect(elections[first].isCampaigning).toBe(false);
    expect(elections[first].signal.aborted).toBe(true);
    await Promise.all(elections.map((election) => election.close()));
    expect(leaders()).toEqual([]);
  });

  it('tells the leader through its signal the moment its lock is lost, elects another, and campaigns again after a pause', async () => {
    const { server, elections, leaders } = cluster(2);
    for (const election of elections) election.start();
    await until(() => leaders().length === 1);
    const first = leaders()[0];
    const signal = elections[first].signal;
    const term = elections[first].term as number;
    server.forceRelease('leader:primary');
    expect(signal.aborted).toBe(true);
    expect((signal.reason as LeadershipLostError).reason).toBe('lock-lost');
    expect((signal.reason as LeadershipLostError).cause).toBeInstanceOf(LockLostError);
    await until(() => leaders().length === 1);
    expect(leaders()[0]).not.toBe(first);
    expect(elections[leaders()[0]].term).toBeGreaterThan(term);
    // The one that lost is back in line: it leads once the other resigns.
    expect(elections[first].isCampaigning).toBe(true);
    await elections[leaders()[0]].resign();
    await until(() => leaders()[0] === first);
    await Promise.all(elections.map((election) => election.close()));
  });

  it('stops leading, for isLeader, as soon as its lease passed on the local clock, before any timer ran (a frozen process)', async () => {
    const { elections, leaders } = cluster(1, { ttl: 100 });
    elections[0].start();
    await until(() => leaders().length === 1);
    const signal = elections[0].signal;
    const frozenUntil = Date.now() + 150;
    while (Date.now() < frozenUntil) {
      // the event loop is blocked: no renewal, no timer
    }
    expect(signal.aborted).toBe(false); // read before the freeze: aborts at the first timer tick
    expect(elections[0].isLeader).toBe(false);
    expect(signal.aborted).toBe(true);
    expect(elections[0].signal.aborted).toBe(true);
    await elections[0].close();
  });

  it('gives back the lock of a term that ended on the local clock while its renewal was on its way, so that another leads', async () => {
    // The store renews the lease; the process freezes before it hears so, past the lease's old end but not
    // past the renewed one. Without giving the lock back, the watchdog would go on renewing it for nobody.
    const { server, elections, leaders, log } = cluster(2, {}, withRenewalHook(new InMemoryLockStrategy()));
    for (const election of elections) election.start();
    await until(() => leaders().length === 1);
    const first = leaders()[0];
    let ledAfterFreeze: boolean | undefined;
    server.afterNextRenewal(() => {
      const frozenUntil = Date.now() + 250;
      while (Date.now() < frozenUntil) {
        // the event loop is blocked
      }
      ledAfterFreeze = elections[first].isLeader;
    });
    await until(() => ledAfterFreeze !== undefined);
    expect(ledAfterFreeze).toBe(false);
    await until(() => leaders().length === 1 && log.filter((line) => line.startsWith('gained')).length > 1);
    const terms = log.filter((line) => line.startsWith('gained')).map((line) => Number(line.split(' ')[2]));
    expect(terms[1]).toBeGreaterThan(terms[0]);
    await Promise.all(elections.map((election) => election.close()));
  });

  it('waitForLeadership resolves for the leader and times out for the others; close() ends the campaign', async () => {
    const { elections } = cluster(2);
    elections[0].start();
    await elections[0].waitForLeadership({ timeout: 1_000 });
    elections[1].start();
    await expect(elections[1].waitForLeadership({ timeout: 50 })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
    await elections[0].close();
    await elections[1].waitForLeadership({ timeout: 1_000 });
    expect(() => elections[0].start()).toThrow(InvalidLockOptionsError);
    await elections[1].close();
  });

  it('refuses bad options before touching the lock', () => {
    const service = new LockService(new LockManager(new InMemoryLockStrategy()));
    expect(() => new LeaderElection(service, { name: '' })).toThrow(InvalidLockKeyError);
    expect(() => new LeaderElection(service, { name: 'x', ttl: 0 })).toThrow(InvalidLockOptionsError);
    expect(() => new LeaderElection(service, { name: 'x', retry: { initialDelay: 50, maxDelay: 10 } })).toThrow(/maxDelay/);
    expect(() => new LeaderElection(service, { name: 'x', term: 1 } as unknown as LeaderElectionOptions)).toThrow(/unknown option/);
  });
});
