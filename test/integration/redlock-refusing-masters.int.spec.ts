import { randomUUID } from 'node:crypto';
import { LockManager, LockService } from '@app/distributed-lock';
import { RedlockStrategy } from '@app/distributed-lock/strategies/redis';
import { redisAclRules } from '@app/distributed-lock/strategies/redis/redis-acl';
import { redisLockKeys } from '@app/distributed-lock/strategies/redis/redis-keys';
import { Redis } from 'ioredis';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis';

const run = randomUUID().slice(0, 8);
const NAMESPACE = 'dlock:redlock:';

/**
 * Masters whose user has exactly the ACL rules of docs/security.md for Redlock: every master votes, the
 * first one (which keeps the line) included, so that a master refusing by mistake leaves a majority.
 */
describe('Redlock: masters under the ACL recipe', () => {
  const started: PrivateRedis[] = [];
  const managers: LockManager[] = [];
  const rules = redisAclRules(NAMESPACE, true);
  const start = async (count: number, userRules: string): Promise<PrivateRedis[]> => {
    const masters = await Promise.all(Array.from({ length: count }, () => startPrivateRedis(['--user', 'app', 'on', '>app-password', ...userRules.split(' ')])));
    started.push(...masters);
    return masters;
  };
  const serviceOn = (masters: readonly PrivateRedis[]): LockService => {
    const manager = new LockManager(new RedlockStrategy({ connections: masters.map((master) => `redis://app:app-password@127.0.0.1:${master.port}`) }), { operationTimeout: 3_000 });
    managers.push(manager);
    return new LockService(manager);
  };

  afterAll(async () => {
    await Promise.all(managers.map((manager) => manager.close().catch(() => undefined)));
    await Promise.all(started.map((master) => master.stop()));
  }, 30_000);

  it('the first master votes too: it holds the key of a lock taken under the recipe', async () => {
    const masters = await start(3, rules);
    const lock = await serviceOn(masters).acquire(`first-votes:${run}`, { waitTimeout: 2_000 });
    // Read as the default user, who keeps every right.
    const admin = new Redis(masters[0].url);
    try {
      expect(await admin.hget(redisLockKeys(NAMESPACE, `first-votes:${run}`).keys[0], 'o')).not.toBeNull();
    } finally {
      admin.disconnect();
      await lock.release();
    }
  }, 30_000);

  it('one master refusing by ACL (a minority): the lock is still taken on the other two', async () => {
    const complete = await start(2, rules);
    const [lacking] = await start(1, rules.replace(/\+set /, ''));
    const lock = await serviceOn([...complete, lacking]).acquire(`minority:${run}`, { waitTimeout: 2_000 });
    expect(lock.isHeld).toBe(true);
    expect(await lock.release()).toBe(true);
  }, 30_000);
});
