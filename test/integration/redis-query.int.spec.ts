import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { LockManager, LockPermissionDeniedError, LockService } from '@app/distributed-lock';
import { redisAclRules } from '@app/distributed-lock/strategies/redis/redis-acl';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis';
import { RedisLockStrategy } from '@app/distributed-lock/strategies/redis';
import { redisLockKeys } from '@app/distributed-lock/strategies/redis/redis-keys';

// What LockService.query reads from Redis's keys beyond the contract (test/contract/query.contract.ts).
const url = (): string => process.env.LOCK_TEST_REDIS_URL as string;
const run = randomUUID().slice(0, 8);

describe('Redis query', () => {
  let admin: Redis;
  let manager: LockManager;
  let locks: LockService;

  beforeAll(() => {
    admin = new Redis(url());
    manager = new LockManager(new RedisLockStrategy({ connection: url() }));
    locks = new LockService(manager);
  });

  afterAll(async () => {
    await manager.close();
    admin.disconnect();
  });

  it('gives no grant time to a writer an older version of the scripts granted (a rolling upgrade): never the one a previous writer left', async () => {
    const key = `query-upgrade:${run}`;
    const lockKey = redisLockKeys('dlock:', key).keys[0];
    const first = await locks.acquire(key, { ttl: 10_000 });
    expect((await locks.query(key)).held[0].grantedAt).not.toBeNull();
    // What an older release and grant leave: the writer and its token replaced, the grant time untouched.
    await admin.hset(lockKey, 'o', `${first.owner}-older`, 't', String((first.fencingToken as number) + 1));
    const [held] = (await locks.query(key)).held;
    expect(held.owner.id).toBe(`${first.owner}-older`);
    expect(held.grantedAt).toBeNull();
    await admin.del(lockKey);
  });
});

/** docs/security.md: the ACL recipe for locking has no SCAN; queryPrefix says what to grant, and works once granted. */
describe('Redis queryPrefix under the ACL recipe', () => {
  const started: PrivateRedis[] = [];
  const managers: LockManager[] = [];
  afterAll(async () => {
    await Promise.all(managers.map((manager) => manager.close().catch(() => undefined)));
    await Promise.all(started.map((server) => server.stop()));
  }, 30_000);

  const serviceOn = async (rules: string): Promise<LockService> => {
    const server = await startPrivateRedis(['--user', 'app', 'on', '>app-password', ...rules.split(' ')]);
    started.push(server);
    const manager = new LockManager(new RedisLockStrategy({ connection: `redis://app:app-password@127.0.0.1:${server.port}` }));
    managers.push(manager);
    return new LockService(manager);
  };

  it('fails with LockPermissionDeniedError naming +scan without it, and lists the keys with it; locking works either way', async () => {
    const recipe = redisAclRules('dlock:');
    const without = await serviceOn(recipe);
    const held = await without.acquire(`acl-prefix:${run}:a`);
    const refused = await without.queryPrefix(`acl-prefix:${run}:`).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(LockPermissionDeniedError);
    expect((refused as LockPermissionDeniedError).grant).toContain('+scan');
    await held.release();
    const granted = await serviceOn(`${recipe} +scan`);
    const lock = await granted.acquire(`acl-prefix:${run}:b`);
    expect((await granted.queryPrefix(`acl-prefix:${run}:`)).locks.map((each) => each.key)).toEqual([`acl-prefix:${run}:b`]);
    await lock.release();
  }, 30_000);
});
