import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { LockManager, LockPermissionDeniedError, LockService } from '@app/distributed-lock';
import { RedisLockStrategy } from '@app/distributed-lock/strategies/redis';
import { redisAclRules } from '../../libs/distributed-lock/src/strategies/redis/redis-acl';
import { redisLockKeys, redisSemaphoreKeys } from '../../libs/distributed-lock/src/strategies/redis/redis-keys';
import { REDIS_TLS, startTopology, stopTopology, type RunningTopology } from '../../scripts/services';
import { describeLockStrategyContract } from '../contract/lock-strategy.contract';
import { ensureSecurePackages, redisTlsOptions } from '../support/secure-servers';

const { admin, app } = REDIS_TLS.users;
const run = randomUUID().slice(0, 8);

beforeAll(() => ensureSecurePackages(), 300_000);

/** A client of the operator's (all commands, all keys), for set-up and for looking behind the library's back. */
function adminClient(): Redis {
  return new Redis({ ...redisTlsOptions(admin.name, admin.password), maxRetriesPerRequest: 1 });
}

// The contract suite through TLS as the least-privilege user: the ACL of docs/security.md is enough for
// every behaviour. Cross-process sections are left out: their workers find subjects by name in subjects.ts.
describeLockStrategyContract({
  name: 'redis (TLS, least-privilege ACL user)',
  capabilities: { fencing: true, fifo: true, sharedLocks: true, crossProcess: false },
  topology: 'redis-tls',
  create: async () => new RedisLockStrategy({ connection: redisTlsOptions(app.name, app.password), name: 'redis-tls' }),
  removeBehindBack: async (_strategy, key) => {
    const operator = adminClient();
    try {
      await operator.del(redisLockKeys(REDIS_TLS.namespace, key).keys[0]);
    } finally {
      operator.disconnect();
    }
  },
});

describe('Redis with TLS and ACL users', () => {
  let topology: RunningTopology;
  let operator: Redis;
  const closers: Array<() => Promise<unknown>> = [];

  /** A lock service as `user`, closed after the suite. */
  function locksAs(user: string, password: string, fair?: boolean): LockService {
    const manager = new LockManager(new RedisLockStrategy({ connection: redisTlsOptions(user, password), name: `redis-tls-${user}`, fair }), { operationTimeout: 3_000 });
    closers.push(() => manager.close());
    return new LockService(manager);
  }

  /** Makes (or remakes) a user with `rules`. */
  async function user(name: string, rules: string): Promise<void> {
    await operator.call('ACL', 'SETUSER', name, 'reset', 'on', `>${name}-pw`, ...rules.split(' '));
  }

  beforeAll(async () => {
    topology = await startTopology('redis-tls');
    operator = adminClient();
  }, 60_000);

  afterAll(async () => {
    for (const close of closers) await close().catch(() => undefined);
    operator?.disconnect();
    if (topology?.managed) await stopTopology('redis-tls');
  }, 30_000);

  it('serves TLS only, with the default user off, and gives the library’s user exactly the rules of the recipe', async () => {
    const anonymous = new Redis({ ...redisTlsOptions(app.name, app.password), username: undefined, password: undefined, maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true });
    anonymous.on('error', () => undefined);
    await anonymous.connect().catch(() => undefined);
    await expect(anonymous.get('dlock:x')).rejects.toThrow(/NOAUTH|closed|WRONGPASS/);
    anonymous.disconnect();
    const rules = (await operator.call('ACL', 'GETUSER', app.name)) as unknown[];
    expect(JSON.stringify(rules)).toContain('~dlock:*');
    const recipe = readFileSync('docs/security.md', 'utf8');
    expect(recipe).toContain(`user lock-app on >… ${redisAclRules('dlock:')}`);
  });

  // Seen in a full run (secret-leak.int.spec.ts): ioredis fails the commands queued at a refused login
  // with the refusal, then closes the connection to try again; an acquire sent in between failed with the
  // closing, as LockBackendUnavailableError, which says nothing of the password. Sent there on purpose here.
  it('tells a wrong password as such also to an acquire sent while the refused connection closes', async () => {
    const strategy = new RedisLockStrategy({ connection: { ...redisTlsOptions(app.name, 'not-the-password'), maxRetriesPerRequest: 0 }, name: 'redis-tls-refused' });
    const manager = new LockManager(strategy, { operationTimeout: 3_000 });
    closers.push(() => manager.close());
    const locks = new LockService(manager);
    const client = (strategy as unknown as { client: Redis }).client;
    const error = await new Promise<unknown>((resolve) => {
      client.once('error', () => void locks.acquire(`tls:${run}:refused`, { waitTimeout: 500 }).then(resolve, resolve));
    });
    expect(error).toBeInstanceOf(LockPermissionDeniedError);
    expect(String((error as Error).message)).toMatch(/user name and password/);
  });

  it('keeps a stranger (another key pattern) from deleting a held lock’s keys', async () => {
    await user('stranger', 'resetkeys ~other:* resetchannels &other:* -@all +get +set +del +eval +evalsha +publish');
    const locks = locksAs(app.name, app.password);
    const key = `tls:${run}:stranger`;
    const lock = await locks.acquire(key, { ttl: 10_000 });
    const stranger = new Redis({ ...redisTlsOptions('stranger', 'stranger-pw'), maxRetriesPerRequest: 0, enableReadyCheck: false });
    try {
      const lockKey = redisLockKeys(REDIS_TLS.namespace, key).keys[0];
      await expect(stranger.del(lockKey)).rejects.toThrow(/NOPERM/);
      await expect(stranger.eval("return redis.call('DEL', KEYS[1])", 1, lockKey)).rejects.toThrow(/NOPERM/);
      await expect(stranger.publish(redisLockKeys(REDIS_TLS.namespace, key).channel, 'r')).rejects.toThrow(/NOPERM/);
      expect(await operator.exists(lockKey)).toBe(1);
      await lock.extend(10_000);
      expect(lock.isHeld).toBe(true);
    } finally {
      stranger.disconnect();
      await lock.release();
    }
  });

  it.each([
    { missing: 'the EVALSHA command', rules: redisAclRules('dlock:').replace('+evalsha ', ''), at: 'acquire' },
    { missing: 'a command its scripts call (GET, the fencing token)', rules: redisAclRules('dlock:').replace('+get ', ''), at: 'acquire' },
    { missing: 'the key pattern', rules: redisAclRules('dlock:').replace('~dlock:*', '~other:*'), at: 'acquire' },
    // A release tells the next waiter only (its inbox, both modes): without waiters it publishes nothing, so
    // the release is made with one waiting (barging mode: woken, or handed the lock; fair: handed it).
    { missing: 'PUBLISH, which tells a waiter of a release (fair: false)', rules: redisAclRules('dlock:').replace('+publish ', ''), at: 'release', fair: false },
    { missing: 'PUBLISH, which tells a waiter of a release (fair)', rules: redisAclRules('dlock:').replace('+publish ', ''), at: 'release', fair: true },
  ])('a user without $missing gets LockPermissionDeniedError at $at, naming the rules to grant', async ({ rules, at, fair }) => {
    const name = `short-${at}-${randomUUID().slice(0, 6)}`;
    await user(name, rules);
    const locks = locksAs(name, `${name}-pw`, fair);
    const key = `tls:${run}:${name}`;
    let failure: unknown;
    if (at === 'acquire') {
      failure = await locks.acquire(key, { ttl: 5_000 }).catch((e: unknown) => e);
    } else {
      const lock = await locks.acquire(key, { ttl: 5_000 });
      // The waiter is another instance (another process, in production): it waits in Redis's queue, where a
      // release tells it. (A waiter of the holder's own instance is passed the lock with fair: false, unannounced.)
      const waiting = locksAs(name, `${name}-pw`, fair).acquire(key, { ttl: 5_000, waitTimeout: 5_000 });
      const queue = redisLockKeys(REDIS_TLS.namespace, key).keys[1];
      for (let tries = 0; (await operator.zcard(queue)) < 1; tries += 1) {
        if (tries > 200) throw new Error('the waiter never joined the queue');
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      failure = await lock.release().catch((e: unknown) => e);
      // The waiter gets the lock all the same (a grant or a free lock it finds at its next check).
      await (await waiting).release().catch(() => undefined);
    }
    expect(failure).toBeInstanceOf(LockPermissionDeniedError);
    const error = failure as LockPermissionDeniedError;
    expect(error.grant).toBe(`ACL SETUSER <user> ${redisAclRules('dlock:')}`);
    expect(error.strategy).toBe(`redis-tls-${name}`);
    expect(error.message).toContain('~dlock:*');
  });

  it('lets a user with exactly the documented rules resize a semaphore whose holder crashed and whose waiter died in line', async () => {
    const name = `permits-${randomUUID().slice(0, 6)}`;
    await user(name, redisAclRules('dlock:'));
    const key = `tls:${run}:${name}`;
    const request = (owner: string, ttlMs: number) => ({ key, owner, ttlMs, mode: 'exclusive', permits: 1, weight: 1 }) as const;
    // A holder that never comes back (the raw semaphore: no watchdog, no release), and a waiter whose
    // process went away in line (its client closed: its place is never refreshed again, nor left).
    const crashed = new RedisLockStrategy({ connection: redisTlsOptions(name, `${name}-pw`), name: `redis-tls-${name}-crashed` });
    const dying = new RedisLockStrategy({ connection: redisTlsOptions(name, `${name}-pw`), name: `redis-tls-${name}-dying` });
    closers.push(() => crashed.close());
    expect(await crashed.semaphore.tryAcquire(request(`crashed-${run}`, 300))).not.toBeNull();
    void dying.semaphore.acquire(request(`dying-${run}`, 30_000), { signal: new AbortController().signal, timeoutMs: 20_000 }).catch(() => undefined);
    const queue = redisSemaphoreKeys('dlock:', key).keys[1];
    for (let tries = 0; (await operator.zcard(queue)) < 1; tries += 1) {
      if (tries > 100) throw new Error('the waiter never joined the queue');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await dying.close();
    await new Promise((resolve) => setTimeout(resolve, 2_000)); // past the holder's lease and the waiter's 1.5 s in line
    // Another size: nobody holds and nobody lives in line, so the semaphore forgets its size and its dead queue.
    const permit = await locksAs(name, `${name}-pw`).acquirePermit(key, { permits: 3 });
    expect(permit.permits).toBe(3);
    expect(await permit.release()).toBe(true);
  });

  it.each([
    { missing: 'the EVALSHA command', rules: redisAclRules('dlock:').replace('+evalsha ', ''), at: 'acquire' },
    { missing: 'the key pattern', rules: redisAclRules('dlock:').replace('~dlock:*', '~other:*'), at: 'acquire' },
    { missing: 'a command the release script calls (HDEL)', rules: redisAclRules('dlock:').replace('+hdel ', ''), at: 'release' },
  ])('a permit of a user without $missing gets LockPermissionDeniedError at $at, naming the rules to grant', async ({ rules, at }) => {
    const name = `short-permit-${at}-${randomUUID().slice(0, 6)}`;
    await user(name, rules);
    const locks = locksAs(name, `${name}-pw`);
    const key = `tls:${run}:${name}`;
    let failure: unknown;
    if (at === 'acquire') {
      failure = await locks.acquirePermit(key, { permits: 2, ttl: 5_000 }).catch((e: unknown) => e);
    } else {
      const permit = await locks.acquirePermit(key, { permits: 2, ttl: 5_000 });
      failure = await permit.release().catch((e: unknown) => e);
    }
    expect(failure).toBeInstanceOf(LockPermissionDeniedError);
    const error = failure as LockPermissionDeniedError;
    expect(error.grant).toBe(`ACL SETUSER <user> ${redisAclRules('dlock:')}`);
    expect(error.strategy).toBe(`redis-tls-${name}`);
  });
});
