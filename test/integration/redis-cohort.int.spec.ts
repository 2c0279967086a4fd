import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { InvalidLockOptionsError, LockLostError, LockManager, LockService, type LockHandle } from '@app/distributed-lock';
import { RedisLockStrategy, type RedisLockStrategyOptions } from '@app/distributed-lock/strategies/redis';
import { redisLockKeys } from '@app/distributed-lock/strategies/redis/redis-keys';
import { HeldBackProxy } from '../support/held-back-proxy';
import { SilentServer } from '../support/silent-server';

// Lock cohorting on Redis (fair: false, `localHandover`): a release passes the lock to the next request of
// the same strategy instance, and the instances of other processes (other strategy instances here, each with
// its own client) get the lock back within the bounds.

const run = randomUUID().slice(0, 8);
const url = (): string => process.env.LOCK_TEST_REDIS_URL as string;
const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

describe('Redis lock cohorting (fair: false)', () => {
  let admin: Redis;
  const managers: LockManager[] = [];
  const instance = (options: Partial<RedisLockStrategyOptions> = {}): LockService => {
    const manager = new LockManager(new RedisLockStrategy({ connection: url(), fair: false, ...options }));
    managers.push(manager);
    return new LockService(manager);
  };

  beforeAll(() => {
    admin = new Redis(url());
  });

  afterAll(async () => {
    await Promise.all(managers.map((manager) => manager.close()));
    admin.disconnect();
  });

  it('passes a released lock to the next request of the instance, in arrival order, with a new higher token; only one of them waits in Redis', async () => {
    const locks = instance();
    const key = `cohort-order:${run}`;
    const queue = redisLockKeys('dlock:', key).keys[1];
    const holder = await locks.acquire(key);
    const order: number[] = [];
    const tokens: number[] = [holder.fencingToken as number];
    const waiters = [0, 1, 2, 3].map(async (index) => {
      const lock = await locks.acquire(key, { waitTimeout: 5_000 });
      order.push(index);
      tokens.push(lock.fencingToken as number);
      expect(lock.isHeld).toBe(true);
      await sleep(5);
      await lock.release();
    });
    await sleep(100);
    // The holder is of this instance: its waiters wait in the process, none in Redis's queue.
    expect(await admin.zcard(queue)).toBe(0);
    await holder.release();
    await Promise.all(waiters);
    expect(order).toEqual([0, 1, 2, 3]);
    for (let i = 1; i < tokens.length; i += 1) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]);
    expect(await admin.hget(redisLockKeys('dlock:', key).keys[0], 'o')).toBeNull();
  });

  it('gives a passed lock its full lease, extended by the watchdog like any grant', async () => {
    const locks = instance();
    const key = `cohort-lease:${run}`;
    const holder = await locks.acquire(key, { ttl: 2_000 });
    const next = locks.acquire(key, { waitTimeout: 5_000, ttl: 1_500 });
    await sleep(50);
    await holder.release();
    const lock = await next;
    const lockKey = redisLockKeys('dlock:', key).keys[0];
    expect(await admin.hget(lockKey, 'o')).toBe(lock.owner);
    const pttl = await admin.pttl(lockKey);
    expect(pttl).toBeGreaterThan(1_000);
    expect(pttl).toBeLessThanOrEqual(1_500);
    await lock.release();
  });

  // A passed lock is a grant like any other: fenced, leased, and reported lost when Redis says so.
  it('reports a passed lock deleted behind its successor: its section rejects, and the next holder gets a higher token', async () => {
    const locks = instance();
    const elsewhere = instance();
    const key = `cohort-deleted:${run}`;
    const holder = await locks.acquire(key);
    let successorToken: number | undefined;
    let theirs: LockHandle | undefined;
    const section = locks
      .withLock(
        key,
        async (lock) => {
          successorToken = lock.fencingToken;
          await admin.del(redisLockKeys('dlock:', key).keys[0]);
          theirs = await elsewhere.acquire(key, { waitTimeout: 2_000 });
          return 'done';
        },
        { waitTimeout: 5_000 },
      )
      .catch((error: unknown) => error);
    await sleep(50);
    await holder.release();
    const error = await section;
    expect(error).toBeInstanceOf(LockLostError);
    expect((error as LockLostError).reason).toBe('not-held-at-release');
    expect((error as LockLostError).sectionResult).toEqual({ value: 'done' });
    expect(successorToken).toBeGreaterThan(holder.fencingToken as number);
    expect(theirs?.fencingToken).toBeGreaterThan(successorToken as number);
    // The successor's release did not free the other instance's lock.
    expect(theirs?.isHeld).toBe(true);
    expect(await admin.hget(redisLockKeys('dlock:', key).keys[0], 'o')).toBe(theirs?.owner);
    expect(await theirs?.release()).toBe(true);
  });

  it('reports a passed lock whose lease ran out unextended as expired, and lets another instance in', async () => {
    const locks = instance();
    const elsewhere = instance();
    const key = `cohort-expired:${run}`;
    const holder = await locks.acquire(key);
    const next = locks.acquire(key, { waitTimeout: 5_000, ttl: 400 });
    await sleep(50);
    await holder.release();
    const successor = await next;
    const reason = await new Promise<unknown>((resolve) => {
      if (successor.signal.aborted) resolve(successor.signal.reason);
      successor.signal.addEventListener('abort', () => resolve(successor.signal.reason));
    });
    expect(reason).toBeInstanceOf(LockLostError);
    expect((reason as LockLostError).reason).toBe('expired');
    const theirs = await elsewhere.acquire(key, { waitTimeout: 2_000 });
    expect(theirs.fencingToken).toBeGreaterThan(successor.fencingToken as number);
    expect(await successor.release()).toBe(false);
    expect(await theirs.release()).toBe(true);
  });

  it('does not pass a lock the holder no longer has: the waiter of its instance waits for the one who took it', async () => {
    const locks = instance();
    const elsewhere = instance();
    const key = `cohort-not-ours:${run}`;
    const holder = await locks.acquire(key);
    const next = locks.acquire(key, { waitTimeout: 5_000 });
    let nextGranted = false;
    void next.then(() => (nextGranted = true), () => undefined);
    await sleep(50);
    // Deleted behind the holder, and taken at once by another instance.
    await admin.del(redisLockKeys('dlock:', key).keys[0]);
    const theirs = await elsewhere.acquire(key, { waitTimeout: 2_000 });
    expect(await holder.release()).toBe(false);
    await sleep(200);
    expect(nextGranted).toBe(false);
    expect(await admin.hget(redisLockKeys('dlock:', key).keys[0], 'o')).toBe(theirs.owner);
    await theirs.release();
    const lock = await next;
    expect(lock.fencingToken).toBeGreaterThan(theirs.fencingToken as number);
    expect(await lock.release()).toBe(true);
  });

  it('lets a waiter of another instance in once it has been head of the queue for the window, however many wait here', async () => {
    const here = instance({ localHandover: { passes: 10_000, windowMs: 100 } });
    const elsewhere = instance();
    const key = `cohort-window:${run}`;
    let stop = false;
    let sections = 0;
    // Four requests of this instance take the lock again and again: without the bound, they would keep it.
    const busy = [0, 1, 2, 3].map(async () => {
      while (!stop) {
        const lock = await here.acquire(key, { waitTimeout: 10_000 });
        sections += 1;
        await sleep(1);
        await lock.release();
      }
    });
    await sleep(200);
    const asked = Date.now();
    const theirs = await elsewhere.acquire(key, { waitTimeout: 5_000 });
    const waited = Date.now() - asked;
    stop = true;
    await theirs.release();
    await Promise.all(busy);
    expect(sections).toBeGreaterThan(10);
    // The window (100 ms) from when it became head, plus the section running then and a hand-over.
    expect(waited).toBeLessThan(1_000);
  });

  it('gives the lock back to Redis after `passes` passes in a row', async () => {
    const here = instance({ localHandover: { passes: 2, windowMs: 60_000 } });
    const elsewhere = instance();
    const key = `cohort-passes:${run}`;
    const holder = await here.acquire(key);
    const local = [0, 1, 2, 3].map(() => here.acquire(key, { waitTimeout: 5_000 }));
    await sleep(50);
    const remote = elsewhere.acquire(key, { waitTimeout: 5_000 });
    await sleep(50);
    const got: string[] = [];
    const track = (who: string, lock: Promise<LockHandle>): Promise<void> =>
      lock.then(async (held) => {
        got.push(who);
        await sleep(5);
        await held.release();
      });
    const done = Promise.all([...local.map((lock, i) => track(`here-${i}`, lock)), track('elsewhere', remote)]);
    await holder.release();
    await done;
    // Two passes (here-0, here-1), then the lock goes to Redis's queue, whose head is the other instance.
    expect(got.slice(0, 3)).toEqual(['here-0', 'here-1', 'elsewhere']);
  });

  it('delivers a pass whose answer came after the release gave up on it, and the lock stays the successor\'s alone', async () => {
    // One instance behind a proxy that can hold back Redis's replies, with a short operation timeout.
    const proxy = new HeldBackProxy({ host: new URL(url()).hostname, port: Number(new URL(url()).port) });
    const proxyPort = await proxy.start();
    const manager = new LockManager(new RedisLockStrategy({ connection: `redis://127.0.0.1:${proxyPort}`, fair: false }), { operationTimeout: 100 });
    managers.push(manager);
    const here = new LockService(manager);
    const elsewhere = instance();
    const key = `cohort-late:${run}`;
    try {
      // The instance's inbox open (an earlier wait in Redis's queue), so that a check in the queue is a waiter's.
      const first = await elsewhere.acquire(`${key}:warm`);
      const warming = here.acquire(`${key}:warm`, { waitTimeout: 2_000 });
      await sleep(30);
      await first.release();
      await (await warming).release();
      const holder = await here.acquire(key, { ttl: 5_000 });
      const successor = here.acquire(key, { ttl: 5_000, waitTimeout: 5_000 });
      await sleep(10);
      proxy.holdBack(); // the pass is applied, its answer held back past the release's 100 ms bound
      const released = holder.release().catch((error: unknown) => error);
      await sleep(170);
      proxy.letThrough();
      await released;
      const lock = await successor;
      await sleep(300);
      expect(await admin.hget(redisLockKeys('dlock:', key).keys[0], 'o')).toBe(lock.owner);
      expect(await elsewhere.tryAcquire(key)).toBeNull();
      expect(lock.isHeld).toBe(true);
      expect(await lock.release()).toBe(true);
    } finally {
      await proxy.close();
    }
  }, 20_000);

  it('fails every request of the line within one operation timeout when Redis does not answer, not one timeout each in turn', async () => {
    const silent = new SilentServer();
    const silentPort = await silent.start();
    const manager = new LockManager(new RedisLockStrategy({ connection: `redis://127.0.0.1:${silentPort}`, fair: false }), { operationTimeout: 500 });
    managers.push(manager);
    const locks = new LockService(manager);
    try {
      const started = Date.now();
      const outcomes = await Promise.all([0, 1, 2, 3].map(() => locks.acquire(`cohort-silent:${run}`, { waitTimeout: 10_000 }).then(() => 'held', (error: unknown) => [(error as Error).name, Date.now() - started] as const)));
      for (const outcome of outcomes) {
        expect(outcome[0]).toBe('LockBackendUnavailableError');
        // One operation timeout, with room for a loaded machine: before, the fourth failed after four.
        expect(outcome[1]).toBeLessThan(1_500);
      }
    } finally {
      await manager.close();
      await silent.close();
    }
  }, 20_000);

  it('refuses localHandover in fair mode, and a bad limit, before any server is touched', () => {
    expect(() => new RedisLockStrategy({ connection: 'redis://127.0.0.1:1', localHandover: { passes: 4 } })).toThrow(InvalidLockOptionsError);
    expect(() => new RedisLockStrategy({ connection: 'redis://127.0.0.1:1', fair: false, localHandover: { passes: -1 } })).toThrow(expect.objectContaining({ option: 'localHandover.passes' }));
  });
});
