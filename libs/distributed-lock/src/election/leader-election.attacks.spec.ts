import { LeadershipLostError } from '../errors/leadership-lost.error';
import { LockAcquireAbortedError } from '../errors/lock-acquire-aborted.error';
import { LockManager } from '../locking/lock-manager';
import { LockService } from '../locking/lock-service';
import { InMemoryLockStrategy } from '../strategies/in-memory/in-memory-lock.strategy';
import { LeaderElection } from './leader-election';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One process's election over an in-memory "server". Its 3 s lease (renewed every second) outlasts any stall
 * of the event loop a loaded machine brings: with 300 ms, a 200 ms stall lost the term, and the term won back
 * after the loss's pause counted as "led again" after a resignation.
 */
function election(initialDelay: number): { election: LeaderElection; manager: LockManager } {
  const manager = new LockManager(new InMemoryLockStrategy());
  return { manager, election: new LeaderElection(new LockService(manager), { name: 'primary', ttl: 3_000, retry: { initialDelay, maxDelay: initialDelay * 2 } }) };
}

describe('LeaderElection: start() while a resignation is on its way', () => {
  it('resign() resolves once the lock is released, also when start() is called before it has', async () => {
    const { election: primary, manager } = election(20);
    primary.start();
    await primary.waitForLeadership({ timeout: 1_000 });
    const resigning = primary.resign();
    primary.start(); // e.g. an admin endpoint that re-enables campaigning, racing the resignation
    const outcome = await Promise.race([resigning.then(() => 'resolved'), sleep(1_500).then(() => 'still pending after 1.5 s')]);
    expect(outcome).toBe('resolved');
    await primary.close();
    await manager.close();
  });

  it('campaigns once: a later resign({ rejoin: true }) pauses retry.initialDelay before leading again', async () => {
    const { election: primary, manager } = election(200);
    primary.start();
    await primary.waitForLeadership({ timeout: 1_000 });
    void primary.resign();
    primary.start();
    await primary.waitForLeadership({ timeout: 2_000 });
    await sleep(400); // leading for a while
    let gainedAfterMs: number | undefined;
    const resignedAt = performance.now();
    primary.events.on('gained', () => (gainedAfterMs ??= performance.now() - resignedAt));
    await primary.resign({ rejoin: true });
    await primary.waitForLeadership({ timeout: 2_000 });
    // "After a resignation with rejoin, the pause is exactly this long" (200 ms): not led again before it. A
    // second campaign left over from the race leads again at once. Measured up to the gain, which a stall can
    // only delay (a fixed look at 100 ms could be outrun by it); 5 ms below 200 for the timer's 1 ms clock.
    expect(gainedAfterMs).toBeGreaterThanOrEqual(195);
    await Promise.race([primary.close(), sleep(1_000)]);
    await manager.close();
  });
});

describe('LeaderElection.waitForLeadership: its timeout is a duration like every other', () => {
  // docs/guarantees.md: durations take 10 ms to about 24.8 days; 0, negatives, NaN and 3e9 are refused
  // with InvalidLockOptionsError (as acquire's waitTimeout is), never turned into another outcome.
  for (const timeout of [Number.NaN, -1, 3e9]) {
    it(`refuses timeout ${timeout} with InvalidLockOptionsError instead of timing out at once`, async () => {
      const manager = new LockManager(new InMemoryLockStrategy());
      const locks = new LockService(manager);
      const holder = await locks.acquire('leader:primary'); // someone else leads
      const follower = new LeaderElection(locks, { name: 'primary', ttl: 300 });
      follower.start();
      const outcome = await follower.waitForLeadership({ timeout }).then(
        () => 'leading',
        (error: unknown) => (error as Error).name,
      );
      expect(outcome).toBe('InvalidLockOptionsError');
      await follower.close();
      await holder.release();
      await manager.close();
    });
  }
});

describe('LeaderElection.waitForLeadership: a wait ends when its election closes', () => {
  it('rejects at the close, not at its timeout, and at once once closed (a pending timer kept the process alive)', async () => {
    const manager = new LockManager(new InMemoryLockStrategy());
    const service = new LockService(manager);
    const leader = new LeaderElection(service, { name: 'primary', ttl: 3_000 });
    const follower = new LeaderElection(service, { name: 'primary', ttl: 3_000 });
    leader.start();
    await leader.waitForLeadership({ timeout: 1_000 });
    follower.start();
    const waiting = follower.waitForLeadership({ timeout: 30_000 }).then(
      () => 'led',
      (error: unknown) => error,
    );
    await follower.close();
    const outcome = await Promise.race([waiting, sleep(2_000).then(() => 'still waiting 2 s after the close')]);
    expect(outcome).toBeInstanceOf(LockAcquireAbortedError);
    expect((outcome as LockAcquireAbortedError).cause).toBeInstanceOf(LeadershipLostError);
    expect((outcome as LockAcquireAbortedError).cause).toMatchObject({ reason: 'closed' });
    await expect(follower.waitForLeadership({ timeout: 30_000 })).rejects.toBeInstanceOf(LockAcquireAbortedError);
    await leader.close();
    await manager.close();
  });
});

describe('LeaderElection: its lock service closed under it (the election itself never closed)', () => {
  it('stops campaigning for good, leader and candidate alike: no retry, and a pending waitForLeadership rejects', async () => {
    const manager = new LockManager(new InMemoryLockStrategy());
    const service = new LockService(manager);
    const options = { name: 'primary', ttl: 3_000, retry: { initialDelay: 20, maxDelay: 40 } };
    const leader = new LeaderElection(service, options);
    const candidate = new LeaderElection(service, options);
    const campaignErrors: unknown[] = [];
    for (const side of [leader, candidate]) side.events.on('campaignError', ({ error }) => campaignErrors.push(error));
    leader.start();
    await leader.waitForLeadership({ timeout: 1_000 });
    candidate.start();
    const waiting = candidate.waitForLeadership().then(
      () => 'led',
      (error: unknown) => error,
    );
    await manager.close();
    // Before: both retried every 20–40 ms for as long as the process lived (their pauses' timers kept it alive).
    await sleep(300);
    expect([leader.isCampaigning, candidate.isCampaigning]).toEqual([false, false]);
    expect([leader.isLeader, candidate.isLeader]).toEqual([false, false]);
    const outcome = await waiting;
    expect(outcome).toBeInstanceOf(LockAcquireAbortedError);
    expect((outcome as LockAcquireAbortedError).cause).toMatchObject({ reason: 'closed' });
    expect(campaignErrors).toEqual([]);
    const errorsSoFar = campaignErrors.length;
    await sleep(200);
    expect(campaignErrors.length).toBe(errorsSoFar);
    // Closing the elections afterwards is harmless; starting one again says why it cannot.
    await Promise.all([leader.close(), candidate.close()]);
    expect(() => leader.start()).toThrow(/closed/);
  });
});
