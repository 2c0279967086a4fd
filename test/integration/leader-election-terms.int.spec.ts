import { randomUUID } from 'node:crypto';
import { LeaderElection, LockManager, LockService } from '@app/distributed-lock';
import { ZooKeeperLockStrategy } from '@app/distributed-lock/strategies/zookeeper';
import { withRenewalHook } from '../support/renewal-hook';

const run = randomUUID().slice(0, 8);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
/** The election's lease: short, so that a blocked event loop outlives it; ZooKeeper's session outlives the block. */
const TTL_MS = 300;
const FREEZE_MS = 2 * TTL_MS;

/** Blocks the event loop (a long GC pause, as the process sees it): no timer, no answer is handled meanwhile. */
function freeze(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // blocked
  }
}

async function until(condition: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await sleep(10);
  }
}

/**
 * "Processes" of one election, each with its own ZooKeeper session, and the terms they gained, in the
 * order they gained them.
 */
function candidates(count: number, name: string) {
  const gained: { candidate: number; term: number | undefined }[] = [];
  const strategies = Array.from({ length: count }, () => withRenewalHook(new ZooKeeperLockStrategy({ connect: process.env.LOCK_TEST_ZOOKEEPER as string, sessionTimeout: 4_000, basePath: '/dlock-terms' })));
  const managers = strategies.map((strategy) => new LockManager(strategy));
  const elections = managers.map((manager, candidate) => {
    const election = new LeaderElection(new LockService(manager), { name, ttl: TTL_MS, retry: { initialDelay: 20, maxDelay: 50 } });
    election.events.on('gained', ({ term }) => gained.push({ candidate, term }));
    return election;
  });
  const leaders = (): number[] => elections.flatMap((election, i) => (election.isLeader ? [i] : []));
  const close = async (): Promise<void> => {
    await Promise.all(elections.map((election) => election.close()));
    await Promise.all(managers.map((manager) => manager.close()));
  };
  return { gained, strategies, elections, leaders, close };
}

/** Every term above the one gained before it, with the list in the message. */
function expectRisingTerms(gained: readonly { candidate: number; term: number | undefined }[]): void {
  const story = gained.map((g) => `candidate ${g.candidate} term ${g.term}`).join(', ');
  for (let i = 1; i < gained.length; i += 1) {
    expect(gained[i].term, `term ${i} of: ${story}`).toBeGreaterThan(gained[i - 1].term as number);
  }
}

describe('Leader election on ZooKeeper: terms after a leader was frozen past its lease', () => {
  it('gives a leader that campaigns again after its lease passed while frozen a term above every earlier one', async () => {
    const { gained, elections, leaders, close } = candidates(1, `terms-alone-${run}`);
    try {
      elections[0].start();
      for (let round = 0; round < 4; round += 1) {
        await until(() => leaders().length === 1, `round ${round}: a leader`);
        const count = gained.length;
        freeze(FREEZE_MS);
        expect(elections[0].isLeader).toBe(false); // the lease passed on the local clock: the term ended
        await until(() => gained.length > count && leaders().length === 1, `round ${round}: leading again`);
      }
      expect(gained.length).toBeGreaterThanOrEqual(5);
      expectRisingTerms(gained);
    } finally {
      await close();
    }
  }, 60_000);

  it('gives the next leader, and the frozen one when it leads again, terms above every earlier one', async () => {
    const { gained, elections, leaders, close } = candidates(2, `terms-pair-${run}`);
    try {
      for (const election of elections) election.start();
      for (let round = 0; round < 4; round += 1) {
        await until(() => leaders().length === 1, `round ${round}: a leader`);
        await sleep(50); // the other candidate is in line behind it
        const count = gained.length;
        freeze(FREEZE_MS);
        expect(leaders()).toEqual([]);
        await until(() => gained.length > count && leaders().length === 1, `round ${round}: a new term`);
      }
      expectRisingTerms(gained);
    } finally {
      await close();
    }
  }, 60_000);

  it('frees the lock of a term that ended on the local clock while its renewal was on its way, so that someone leads again', async () => {
    const { gained, strategies, elections, leaders, close } = candidates(2, `terms-renewing-${run}`);
    try {
      for (const election of elections) election.start();
      await until(() => leaders().length === 1, 'a leader');
      const leader = leaders()[0];
      await sleep(50); // the other candidate is in line behind it
      let ledAfterFreeze: boolean | undefined;
      // The server renewed the lease; the process freezes before it hears so, past the lease's old end
      // (2/3 of the ttl after the renewal was sent) but not past the renewed one (the whole ttl).
      strategies[leader].afterNextRenewal(() => {
        freeze(Math.round(TTL_MS * 0.83));
        ledAfterFreeze = elections[leader].isLeader;
      });
      await until(() => ledAfterFreeze !== undefined, 'a renewal answered');
      expect(ledAfterFreeze).toBe(false); // its term ended on the local clock
      const count = gained.length;
      // Its lock, renewed on the server, must not outlive the term: a lock nobody leads with would keep
      // every candidate, this one included, waiting behind it.
      await until(() => gained.length > count && leaders().length === 1, 'a leader again', 5_000);
      expectRisingTerms(gained);
    } finally {
      await close();
    }
  }, 60_000);
});
