import { randomUUID } from 'node:crypto';
import { LockManager, LockService } from '@app/distributed-lock';
import { ZooKeeperLockStrategy } from '@app/distributed-lock/strategies/zookeeper';

// A query on a ZooKeeper ensemble is answered by the server the querying session is connected to, which may
// not have applied yet what another process's server just confirmed. An operator who asks who holds a key
// after a grant or a release was confirmed must see it: every query here comes right after the other
// instance's call returned, from a session on another server of the ensemble.

const servers = (process.env.LOCK_TEST_ZOOKEEPER_ENSEMBLE as string).split(',');
const run = randomUUID().slice(0, 8);
const ROUNDS_PER_PAIR = 25;

const managers: LockManager[] = [];
const instanceOn = (server: string): LockService => {
  const manager = new LockManager(new ZooKeeperLockStrategy({ connect: server, sessionTimeout: 4_000 }));
  managers.push(manager);
  return new LockService(manager);
};

afterAll(async () => {
  await Promise.all(managers.map((manager) => manager.close()));
});

/**
 * Runs `round` ROUNDS_PER_PAIR times for each server, with the holder's instance on it and the observer's on
 * the next one; resolves what the rounds missed (each round says what it missed, or nothing).
 */
async function missedOnEveryPair(name: string, round: (holderSide: LockService, observer: LockService, key: string) => Promise<string[]>): Promise<string[]> {
  const missed: string[] = [];
  for (const [w, writeServer] of servers.entries()) {
    const holderSide = instanceOn(writeServer);
    const observer = instanceOn(servers[(w + 1) % servers.length]);
    for (let i = 0; i < ROUNDS_PER_PAIR; i += 1) missed.push(...(await round(holderSide, observer, `${name}:${run}:${w}:${i}`)));
  }
  return missed;
}

describe('ZooKeeper ensemble: a query sees what another server just confirmed', () => {
  it('names the holder right after its grant, and nobody right after its release, for every pair of servers', async () => {
    const missed = await missedOnEveryPair('ensemble-query', async (holderSide, observer, key) => {
      const lock = await holderSide.acquire(key, { ttl: 10_000 });
      const whileHeld = await observer.query(key);
      await lock.release();
      const afterRelease = await observer.query(key);
      return [
        ...(whileHeld.held[0]?.owner.id === lock.owner ? [] : [`${key}: held by ${lock.owner}, the query named ${JSON.stringify(whileHeld.held)}`]),
        ...(afterRelease.held.length === 0 ? [] : [`${key}: released, the query named ${JSON.stringify(afterRelease.held)}`]),
      ];
    });
    expect(missed).toEqual([]);
  }, 60_000);

  it('counts the permit just taken and not the one just given back, for every pair of servers', async () => {
    const missed = await missedOnEveryPair('ensemble-permits', async (holderSide, observer, key) => {
      const permit = await holderSide.acquirePermit(key, { permits: 2, ttl: 10_000 });
      const whileHeld = await observer.queryPermits(key);
      await permit.release();
      const afterRelease = await observer.queryPermits(key);
      return [
        ...(whileHeld.held.length === 1 ? [] : [`${key}: one permit taken, the query named ${whileHeld.held.length}`]),
        ...(afterRelease.held.length === 0 ? [] : [`${key}: given back, the query named ${afterRelease.held.length}`]),
      ];
    });
    expect(missed).toEqual([]);
  }, 60_000);
});
