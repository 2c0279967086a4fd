import { randomUUID } from 'node:crypto';
import { LockManager, LockService, type LockHandle } from '@app/distributed-lock';
import { RedisLockStrategy } from '@app/distributed-lock/strategies/redis';
import { Redis } from 'ioredis';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const run = randomUUID().slice(0, 8);

/** The fair Redis read-write lock: writers are never overtaken by later readers; queued readers go together. */
describe('Redis read-write lock (fair)', () => {
  let managers: LockManager[];
  let clients: LockService[];

  beforeAll(() => {
    managers = [0, 1, 2].map(() => new LockManager(new RedisLockStrategy({ connection: process.env.LOCK_TEST_REDIS_URL as string })));
    clients = managers.map((manager) => new LockService(manager));
  });

  afterAll(async () => {
    await Promise.all(managers.map((manager) => manager.close()));
  });

  it('does not let a reader overtake a queued writer', async () => {
    const key = `rw:${run}:writer-first`;
    const order: string[] = [];
    const r1 = await clients[0].acquire(key, { mode: 'shared' });
    const writer = clients[1].acquire(key, { waitTimeout: 10_000 }).then((lock) => {
      order.push('writer');
      return lock;
    });
    await sleep(100);
    const reader2 = clients[2].acquire(key, { mode: 'shared', waitTimeout: 10_000 }).then((lock) => {
      order.push('reader2');
      return lock;
    });
    await sleep(100);
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
      await sleep(30);
    }
    let w2In = false;
    const w2 = clients[0].acquire(key, { waitTimeout: 10_000, reentrant: false }).then((lock) => {
      w2In = true;
      return lock;
    });
    await sleep(50);
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
