import { randomUUID } from 'node:crypto';
import { LockManager, LockService, type LockHandle } from '@app/distributed-lock';
import { RedisLockStrategy } from '@app/distributed-lock/strategies/redis';
import { Redis } from 'ioredis';
import { redisLockKeys } from '@app/distributed-lock/strategies/redis/redis-keys';
import { spawnHolder } from '../support/holder-process';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const run = randomUUID().slice(0, 8);

/** How many wait in the fair queue of `key`, read with a client of the test's own. */
const queued = (admin: Redis, key: string): Promise<number> => admin.zcard(redisLockKeys('dlock:', key).keys[1]);

/** Until `length` wait in the queue of `key` (a waiter is in line once its first script ran), bounded. */
async function waitForQueue(admin: Redis, key: string, length: number): Promise<void> {
  for (let waited = 0; (await queued(admin, key)) < length; waited += 20) {
    if (waited > 20_000) throw new Error(`the queue of ${key} never reached ${length}`);
    await sleep(20);
  }
}

/**
 * Until the waiter at the head of the queue of `key` refreshes its place again (its entry's alive-until
 * moves), bounded: its check has then run and answered, and its next one is a whole recheck interval away.
 */
async function waitForHeadRefresh(admin: Redis, key: string): Promise<void> {
  const [, queue, waiters] = redisLockKeys('dlock:', key).keys;
  const aliveOfHead = async (): Promise<string | undefined> => {
    const [head] = await admin.zrange(queue, '0', '0');
    return head === undefined ? undefined : ((await admin.hget(waiters, head)) ?? '').split(':')[1];
  };
  const before = await aliveOfHead();
  for (let waited = 0; (await aliveOfHead()) === before; waited += 5) {
    if (waited > 5_000) throw new Error(`the head of ${key} never refreshed its place`);
    await sleep(5);
  }
}

/** The fair Redis read-write lock: writers are never overtaken by later readers; queued readers go together. */
describe('Redis read-write lock (fair)', () => {
  let managers: LockManager[];
  let clients: LockService[];
  let admin: Redis;

  beforeAll(() => {
    managers = [0, 1, 2].map(() => new LockManager(new RedisLockStrategy({ connection: process.env.LOCK_TEST_REDIS_URL as string })));
    clients = managers.map((manager) => new LockService(manager));
    admin = new Redis(process.env.LOCK_TEST_REDIS_URL as string);
  });

  afterAll(async () => {
    await Promise.all(managers.map((manager) => manager.close()));
    admin.disconnect();
  });

  it('does not let a reader overtake a queued writer', async () => {
    const key = `rw:${run}:writer-first`;
    const order: string[] = [];
    const r1 = await clients[0].acquire(key, { mode: 'shared' });
    const writer = clients[1].acquire(key, { waitTimeout: 10_000 }).then((lock) => {
      order.push('writer');
      return lock;
    });
    await waitForQueue(admin, key, 1);
    const reader2 = clients[2].acquire(key, { mode: 'shared', waitTimeout: 10_000 }).then((lock) => {
      order.push('reader2');
      return lock;
    });
    await waitForQueue(admin, key, 2);
    expect(order).toEqual([]);
    await r1.release();
    const w = await writer;
    await sleep(100);
    expect(order).toEqual(['writer']);
    await w.release();
    const r2 = await reader2;
    expect(order).toEqual(['writer', 'reader2']);
    await r2.release();
  });

  it('grants the readers queued behind a writer together, and the next writer after them', async () => {
    const key = `rw:${run}:readers-together`;
    const w1 = await clients[0].acquire(key);
    const readers: Array<Promise<LockHandle>> = [];
    for (let i = 0; i < 3; i += 1) {
      readers.push(clients[(i % 2) + 1].acquire(key, { mode: 'shared', waitTimeout: 10_000 }));
      await waitForQueue(admin, key, i + 1);
    }
    let w2In = false;
    const w2 = clients[0].acquire(key, { waitTimeout: 10_000, reentrant: false }).then((lock) => {
      w2In = true;
      return lock;
    });
    await waitForQueue(admin, key, 4);
    await w1.release();
    const held = await Promise.all(readers);
    expect(held.every((lock) => lock.isHeld)).toBe(true);
    const tokens = held.map((lock) => lock.fencingToken as number);
    expect(new Set(tokens).size).toBe(3);
    await sleep(100);
    expect(w2In).toBe(false);
    await Promise.all(held.map((lock) => lock.release()));
    const second = await w2;
    expect(second.fencingToken).toBeGreaterThan(Math.max(...tokens));
    await second.release();
  });
});

describe('Redis strategy with the application\'s own client', () => {
  it('uses the given ioredis client and never closes it; its own subscriber connection is closed', async () => {
    const client = new Redis(process.env.LOCK_TEST_REDIS_URL as string);
    const manager = new LockManager(new RedisLockStrategy({ client }));
    const locks = new LockService(manager);
    const holder = await locks.acquire(`own-client:${run}`);
    // A waiter makes the strategy open its dedicated subscriber connection.
    const waiter = locks.acquire(`own-client:${run}`, { waitTimeout: 5_000, reentrant: false });
    await sleep(50);
    await holder.release();
    await (await waiter).release();
    await manager.close();
    expect(client.status).toBe('ready');
    expect(await client.ping()).toBe('PONG');
    await client.quit();
  });
});

/** Fair mode hands a released lock to the first waiter in line: that waiter must be alive to use it. */
describe('Redis fair hand-over reaches a live waiter', () => {
  const url = (): string => process.env.LOCK_TEST_REDIS_URL as string;
  let admin: Redis;
  const managers: LockManager[] = [];
  const serviceOf = (): { manager: LockManager; locks: LockService } => {
    const manager = new LockManager(new RedisLockStrategy({ connection: url() }));
    managers.push(manager);
    return { manager, locks: new LockService(manager) };
  };

  beforeAll(() => {
    admin = new Redis(url());
  });

  afterAll(async () => {
    await Promise.all(managers.map((manager) => manager.close()));
    admin.disconnect();
  });

  it('passes over a waiter killed in line: the next live waiter gets the lock within the claim, not a lease later', async () => {
    const key = `fair-dead:${run}`;
    const { locks: holderSide } = serviceOf();
    const { locks: liveSide } = serviceOf();
    const holder = await holderSide.acquire(key);
    // Another application instance queues for the key with a 30 s lease, then dies in line.
    const dead = spawnHolder('redis (fair)', key, 30_000);
    try {
      await waitForQueue(admin, key, 1);
      dead.child.kill('SIGKILL');
      await dead.exited;
      const live = liveSide.acquire(key, { waitTimeout: 8_000 });
      await waitForQueue(admin, key, 2);
      // Released while the dead waiter still counts as alive (it refreshed its place < 1.5 s ago): the
      // hand-over goes to it, and only reserves the lock for the claim.
      await holder.release();
      const lock = await live;
      expect(lock.isHeld).toBe(true);
      await lock.release();
    } finally {
      dead.child.kill('SIGKILL');
    }
  }, 40_000);

  it('leaves the line when its lock service closes, so a release goes straight to the next live waiter', async () => {
    const key = `fair-closed:${run}`;
    const { locks: holderSide } = serviceOf();
    const { manager: closing, locks: closingSide } = serviceOf();
    const { locks: liveSide } = serviceOf();
    const holder = await holderSide.acquire(key);
    const gone = closingSide.acquire(key, { waitTimeout: 10_000 }).catch((error: unknown) => error);
    await waitForQueue(admin, key, 1);
    const live = liveSide.acquire(key, { waitTimeout: 10_000 });
    await waitForQueue(admin, key, 2);
    await closing.close();
    await gone;
    expect(await queued(admin, key)).toBe(1);
    await holder.release();
    // No claim to wait out: the closed waiter was no longer in line.
    const started = Date.now();
    const lock = await live;
    expect(Date.now() - started).toBeLessThan(1_000);
    await lock.release();
  });

  it('never gives a section a hand-over whose claim ran out while the waiter\'s process stalled', async () => {
    const key = `fair-stalled:${run}`;
    const { locks: holderSide } = serviceOf();
    const { locks: stalledSide } = serviceOf();
    const holder = await holderSide.acquire(key);
    let resolvedAt = 0;
    const stalled = stalledSide.acquire(key, { waitTimeout: 15_000 }).then((lock) => {
      resolvedAt = Date.now();
      return lock;
    });
    await waitForQueue(admin, key, 1);
    // Another application instance queues behind, with a short lease that its watchdog keeps.
    const other = spawnHolder('redis (fair)', key, 2_000);
    try {
      await waitForQueue(admin, key, 2);
      // Released just after the waiter's own check ran. A check already on its way when the lock is handed
      // over reaches the server after the grant and rightly takes the lock before the stall: that is not
      // the stall this test is about.
      await waitForHeadRefresh(admin, key);
      await holder.release(); // handed to the waiter of this process, for the 1.5 s claim
      const until = Date.now() + 2_500;
      while (Date.now() < until) {
        // this process stalls past the claim: the other instance gets the lock meanwhile
      }
      for (let waited = 0; !other.lines.some((line) => line.startsWith('held')) && waited < 5_000; waited += 50) await sleep(50);
      expect(other.lines.some((line) => line.startsWith('held'))).toBe(true);
      expect(resolvedAt).toBe(0); // not handed a lock the other instance holds
      other.child.kill('SIGKILL');
      const killedAt = Date.now();
      const lock = await stalled;
      expect(resolvedAt).toBeGreaterThanOrEqual(killedAt);
      expect(lock.isHeld).toBe(true);
      expect(lock.expiresAt).toBeGreaterThan(Date.now());
      await lock.release();
    } finally {
      other.child.kill('SIGKILL');
    }
  }, 40_000);

  it('refuses, in its scripts, a lease that is not whole milliseconds before writing anything', async () => {
    // The lock service rounds durations; a strategy called directly must still never leave a key without expiry.
    const key = `fractional:${run}`;
    const strategy = new RedisLockStrategy({ connection: url() });
    try {
      await expect(strategy.tryAcquire({ key, owner: 'raw', ttlMs: 1000.5, mode: 'exclusive' })).rejects.toThrow(/whole milliseconds/);
      for (const name of redisLockKeys('dlock:', key).keys) expect(await admin.exists(name)).toBe(0);
    } finally {
      await strategy.close();
    }
  });

  it('turns a hand-over into the full lease: a waiter with an explicit ttl keeps the lock past the claim', async () => {
    const key = `fair-claim:${run}`;
    const { locks: holderSide } = serviceOf();
    const { locks: waiterSide } = serviceOf();
    const holder = await holderSide.acquire(key);
    const waiting = waiterSide.acquire(key, { ttl: 4_000, autoExtend: false, waitTimeout: 10_000 });
    await waitForQueue(admin, key, 1);
    await holder.release();
    const lock = await waiting;
    await sleep(2_500); // past the 1.5 s claim
    expect(lock.signal.aborted).toBe(false);
    expect(await admin.pttl(redisLockKeys('dlock:', key).keys[0])).toBeGreaterThan(500);
    expect(await holderSide.tryAcquire(key)).toBeNull();
    expect(await lock.release()).toBe(true);
  }, 20_000);

  it('tells a hand-over only to the connection of the waiter it names, however many instances wait', async () => {
    const key = `fair-inbox:${run}`;
    const { locks: holderSide } = serviceOf();
    const waiters = [serviceOf(), serviceOf(), serviceOf(), serviceOf()];
    const holder = await holderSide.acquire(key);
    const order: number[] = [];
    const waiting = waiters.map(({ locks }, i) =>
      locks.acquire(key, { waitTimeout: 10_000 }).then(async (lock) => {
        order.push(i);
        await lock.release();
      }),
    );
    await waitForQueue(admin, key, waiters.length);
    // Nobody waits on the lock's own channel: each instance listens on one inbox of its own.
    const { channel } = redisLockKeys('dlock:', key);
    expect(await admin.pubsub('NUMSUB', channel)).toEqual([channel, 0]);
    // Each waiter's place names its inbox (the last field of its entry), and each is a channel of its own.
    const places = await admin.hgetall(redisLockKeys('dlock:', key).keys[2]);
    const inboxes = Object.entries(places).flatMap(([owner, place]) => (owner.startsWith('#') ? [] : [place.slice(place.indexOf('dlock:inbox:'))]));
    expect(new Set(inboxes).size).toBe(waiters.length);
    // A fair waiter's entry has the five fields earlier versions parse (a rolling upgrade still hands over to its inbox).
    for (const [owner, place] of Object.entries(places)) if (!owner.startsWith('#')) expect(place).toMatch(/^\d+:\d+:x:\d+:dlock:inbox:/);
    // Each hand-over is published to exactly one subscriber: count the messages on the waiters' inboxes
    // (only theirs: other files publish on inboxes of their own at the same time).
    const spy = new Redis(url());
    let heard = 0;
    spy.on('message', () => (heard += 1));
    await spy.subscribe(...inboxes);
    await holder.release();
    await Promise.all(waiting);
    expect(heard).toBe(waiters.length);
    expect(order).toHaveLength(waiters.length);
    spy.disconnect();
  }, 20_000);

  it('still hands the lock to a waiter queued without an inbox (an earlier version of the library), on the lock\'s channel', async () => {
    const key = `fair-old-waiter:${run}`;
    const { locks } = serviceOf();
    const { keys, channel } = redisLockKeys('dlock:', key);
    const holder = await locks.acquire(key);
    // What an earlier version wrote for its waiter: "<ttl>:<aliveUntil>:<mode>:<claim>", no inbox.
    const [seconds, micros] = await admin.time();
    const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    await admin.zadd(keys[1], 1, 'old-waiter');
    await admin.hset(keys[2], 'old-waiter', `10000:${now + 5_000}:x:1500`);
    const old = new Redis(url());
    const told = new Promise<string>((resolve) => old.on('message', (_channel, message: string) => resolve(message)));
    await old.subscribe(channel);
    await holder.release();
    expect(await told).toMatch(/^g old-waiter \d+$/);
    expect(await admin.hget(keys[0], 'o')).toBe('old-waiter');
    old.disconnect();
    await admin.del(...keys);
  }, 20_000);
});
