import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { LeaderElection, LockManager, LockService, type LeadershipInfo, type LockStrategy } from '@app/distributed-lock';
import { EtcdLockStrategy } from '@app/distributed-lock/strategies/etcd';
import { RedisLockStrategy } from '@app/distributed-lock/strategies/redis';
import { ZooKeeperLockStrategy } from '@app/distributed-lock/strategies/zookeeper';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run through npm test`);
  return value;
};

/** Backends that keep a line of candidates, each candidate with a client of its own, as separate app instances have. */
const BACKENDS: ReadonlyArray<{ readonly name: string; create(): LockStrategy }> = [
  { name: 'Redis (fair)', create: () => new RedisLockStrategy({ connection: env('LOCK_TEST_REDIS_URL') }) },
  { name: 'etcd', create: () => new EtcdLockStrategy({ connection: { hosts: env('LOCK_TEST_ETCD').split(',') } }) },
  { name: 'ZooKeeper', create: () => new ZooKeeperLockStrategy({ connect: env('LOCK_TEST_ZOOKEEPER'), sessionTimeout: 4_000 }) },
];

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  for (const started = Date.now(); ; await sleep(20)) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() - started > 10_000) throw new Error(`not within 10 s: ${what} (last: ${JSON.stringify(value)})`);
  }
}

/**
 * `LeaderElection.query()` from a process that does not campaign: it names the leader (its instance, term and
 * lease) and the candidates in the order the backend will choose them, and that order is the one the next
 * leaders come in.
 */
describe.each(BACKENDS)('LeaderElection.query on $name', ({ create }) => {
  it('names the leader with its term, and the candidates in the order they then lead', async () => {
    const name = `leadership-query-${randomUUID().slice(0, 8)}`;
    const managers = [0, 1, 2].map((i) => new LockManager(create(), { instanceName: `candidate-${i}` }));
    const observerManager = new LockManager(create(), { instanceName: 'observer' });
    const elections = managers.map((manager) => new LeaderElection(new LockService(manager), { name, ttl: 5_000 }));
    const observer = new LeaderElection(new LockService(observerManager), { name, ttl: 5_000 });
    const leaderIndex = (): number => elections.findIndex((election) => election.isLeader);
    try {
      expect(await observer.query()).toEqual({ election: name, leader: null, candidates: [] });
      for (const election of elections) {
        election.start();
        // One at a time, so that the line has a known order.
        await sleep(100);
      }
      const seen: LeadershipInfo = await until(() => observer.query(), (info) => info.leader !== null && info.candidates?.length === 2, 'a leader and two candidates');
      const first = leaderIndex();
      expect(first).toBeGreaterThanOrEqual(0);
      expect(seen.leader?.owner).toMatchObject({ instance: `candidate-${first}`, host: hostname(), pid: process.pid });
      expect(seen.leader?.term).toBe(elections[first].term ?? null);
      const next = (seen.candidates ?? []).map((owner) => owner.instance);
      expect(new Set([`candidate-${first}`, ...next]).size).toBe(3);
      // Each leader resigns in turn: the next is the one the query named next.
      for (const expected of next) {
        await elections[leaderIndex()].resign();
        await until(async () => leaderIndex(), (index) => index >= 0, 'the next leader');
        expect(`candidate-${leaderIndex()}`).toBe(expected);
        const now = await observer.query();
        expect(now.leader?.owner.instance).toBe(expected);
        expect(now.leader?.term).toBe(elections[leaderIndex()].term ?? null);
        expect(now.leader?.term).toBeGreaterThan(seen.leader?.term ?? 0);
      }
    } finally {
      await Promise.all([...elections, observer].map((election) => election.close()));
      await Promise.all([...managers, observerManager].map((manager) => manager.close()));
    }
  }, 30_000);
});
