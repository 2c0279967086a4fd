import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { PermitGrant, PermitRequest } from '@app/distributed-lock/locking/lock-lease';
import { redisSemaphoreKeys } from '@app/distributed-lock/strategies/redis/redis-keys';
import { PERMIT_ACQUIRE_SCRIPT, type PermitAcquireArgs } from '@app/distributed-lock/strategies/redis/redis-semaphore.scripts';
import { RedisScript } from '@app/distributed-lock/strategies/redis/redis-script';
import { bargingStrategies } from '../support/barging-strategies';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const run = randomUUID().slice(0, 8);
const url = (): string => process.env.LOCK_TEST_REDIS_URL as string;
const permit = (key: string, owner: string, weight: number, permits = 2, ttlMs = 10_000): PermitRequest => ({ key, owner, ttlMs, mode: 'exclusive', permits, weight });
const budget = (timeoutMs: number): { signal: AbortSignal; timeoutMs: number } => ({ signal: new AbortController().signal, timeoutMs });

/**
 * `fair: false` rules the strategy's semaphores as it rules its locks: a request whose weight fits may take
 * free places while the head of the queue has been head for less than `bargeWindowMs`, and the head is
 * woken to try; past the window the head is served first and nobody overtakes it.
 */
describe('Redis semaphore, fair: false (bounded barging)', () => {
  const fixture = bargingStrategies();
  const { make } = fixture;

  it('says its semaphores are FIFO only in fair mode', () => {
    expect(make().capabilities.semaphores).toEqual({ fifo: false, fencing: true });
    expect(make({ fair: true }).capabilities.semaphores).toEqual({ fifo: true, fencing: true });
  });

  it('lets a request that fits take free places while the head is within its window, and serves the head once the window passed', async () => {
    const key = `permit-barge:${run}:window`;
    const keys = redisSemaphoreKeys('dlock:', key).keys;
    // A window wide enough for the steps inside it on a loaded machine (it must stay below the re-check).
    const holder = make({ bargeWindowMs: 1_500, recheckInterval: 3_000 });
    const barger = make({ bargeWindowMs: 1_500, recheckInterval: 3_000 });
    const first = await holder.semaphore.tryAcquire(permit(key, 'holder', 2));
    expect(first).not.toBeNull();
    // A waiter queued by the acquire script itself, on an inbox the test listens to: it never acts on what
    // it is told, so what the scripts decide is seen alone. Its name ends in ":b", as a barging client's does.
    const inbox = `dlock:inbox:test-${run}:b`;
    const heard: string[] = [];
    const subscriber = new Redis(url());
    try {
      await subscriber.subscribe(inbox);
      subscriber.on('message', (_channel: string, message: string) => heard.push(message));
      const args: PermitAcquireArgs = ['head', 10_000, 2, 1, '1', 30_000, inbox, 1_500];
      const queued = await new RedisScript(PERMIT_ACQUIRE_SCRIPT).run(fixture.admin, keys, args);
      expect(queued[0]).toBe(0);
      expect(await fixture.admin.zrange(keys[1], '0', '-1')).toEqual(['head']);

      // Released while the head is within its window: the places stay free (not handed to the head), and the
      // head is woken to try. A FIFO semaphore would have granted the head, and refused the barger.
      expect(await holder.semaphore.release(first as PermitGrant)).toBe(true);
      expect(await fixture.admin.zscore(keys[0], 'head')).toBeNull();
      const barged = await barger.semaphore.tryAcquire(permit(key, 'barger', 2));
      expect(barged).not.toBeNull();
      expect(await fixture.admin.zrange(keys[1], '0', '-1')).toEqual(['head']);
      expect(barged?.fencingToken).toBeGreaterThan(first?.fencingToken ?? Infinity);

      // Released again within the window: the head, already woken and not yet back, is not woken again.
      expect(await barger.semaphore.release(barged as PermitGrant)).toBe(true);
      const again = await barger.semaphore.tryAcquire(permit(key, 'barger-2', 2));
      expect(again).not.toBeNull();
      await sleep(100);
      expect(heard).toEqual(['w head']);

      // Past the window: the release hands the head its place, and a request that would overtake it waits.
      await sleep(1_550);
      expect(await barger.semaphore.release(again as PermitGrant)).toBe(true);
      expect(await fixture.admin.zscore(keys[0], 'head')).not.toBeNull();
      expect(await fixture.admin.zrange(keys[1], '0', '-1')).toEqual([]);
      await sleep(100);
      expect(heard).toHaveLength(2);
      expect(heard[1]).toMatch(/^g head \d+$/);
      expect(Number(heard[1].split(' ')[2])).toBeGreaterThan(again?.fencingToken ?? Infinity);
    } finally {
      subscriber.disconnect();
      await fixture.admin.del(...keys);
    }
  });

  it('does not let a barging request overtake a head whose window passed, even when it fits', async () => {
    const key = `permit-barge:${run}:past`;
    const keys = redisSemaphoreKeys('dlock:', key).keys;
    const holder = make({ bargeWindowMs: 300, recheckInterval: 3_000 });
    const first = await holder.semaphore.tryAcquire(permit(key, 'holder', 1));
    expect(first).not.toBeNull();
    try {
      // A heavy head (2 of 2) waits behind the holder; past its window a light request that fits (1 free
      // place) still queues behind it, so that the head is not starved by light ones.
      const args: PermitAcquireArgs = ['heavy', 10_000, 2, 2, '1', 30_000, '', 300];
      expect((await new RedisScript(PERMIT_ACQUIRE_SCRIPT).run(fixture.admin, keys, args))[0]).toBe(0);
      await sleep(400);
      expect(await holder.semaphore.tryAcquire(permit(key, 'light', 1))).toBeNull();
      // Within a new head's window, the same light request gets the free place: a window a stalled machine
      // does not outlast between the two calls.
      await fixture.admin.zrem(keys[1], 'heavy');
      await new RedisScript(PERMIT_ACQUIRE_SCRIPT).run(fixture.admin, keys, ['heavy-2', 10_000, 2, 2, '1', 30_000, '', 2_000]);
      const wide = make({ bargeWindowMs: 2_000, recheckInterval: 3_000 });
      const light = await wide.semaphore.tryAcquire(permit(key, 'light-2', 1));
      expect(light).not.toBeNull();
    } finally {
      await fixture.admin.del(...keys);
    }
  });

  it('serves the next waiter when a woken head took its place and the rest fits it, without waiting for its re-check', async () => {
    const key = `permit-barge:${run}:chain`;
    // Re-checks far apart: a waiter that nobody serves holds nothing until its first re-check, 5 s on.
    const options = { bargeWindowMs: 1_000, recheckInterval: 5_000 };
    const holder = make(options);
    const first = await holder.semaphore.tryAcquire(permit(key, 'holder', 2));
    expect(first).not.toBeNull();
    const queue = redisSemaphoreKeys('dlock:', key).keys[1];
    const head = make(options).semaphore.acquire(permit(key, 'head', 1), budget(8_000));
    for (let tries = 0; (await fixture.admin.zcard(queue)) < 1; tries += 1) {
      if (tries > 500) throw new Error('the head never joined the queue');
      await sleep(5);
    }
    const next = make(options).semaphore.acquire(permit(key, 'next', 1), budget(8_000));
    for (let tries = 0; (await fixture.admin.zcard(queue)) < 2; tries += 1) {
      if (tries > 500) throw new Error('the next waiter never joined the queue');
      await sleep(5);
    }
    // Released within the head's window: the head is woken and takes one place; one is left, which fits the next.
    expect(await holder.semaphore.release(first as PermitGrant)).toBe(true);
    expect(await head).not.toBeNull();
    // Served by the scripts, long before its own re-check would find the place.
    let servedAfterChecks = 0;
    while ((await fixture.admin.zscore(redisSemaphoreKeys('dlock:', key).keys[0], 'next')) === null) {
      servedAfterChecks += 1;
      if (servedAfterChecks > 150) throw new Error('the next waiter was not served while a place fit it');
      await sleep(10);
    }
    expect(await next).not.toBeNull();
  }, 15_000);

  it('hands the places to a waiter of a fair instance at the head, as a fair release does, rather than waking it', async () => {
    const key = `permit-barge:${run}:mixed`;
    const holder = make({ bargeWindowMs: 1_000, recheckInterval: 5_000 });
    const barger = make({ bargeWindowMs: 1_000, recheckInterval: 5_000 });
    const fair = make({ fair: true, recheckInterval: 5_000 });
    const first = await holder.semaphore.tryAcquire(permit(key, 'holder', 1, 1));
    expect(first).not.toBeNull();
    const queue = redisSemaphoreKeys('dlock:', key).keys[1];
    // Within its budget only by a hand-over: its own re-check comes after 5 s.
    const waiting = fair.semaphore.acquire(permit(key, 'fair-waiter', 1, 1), budget(4_000));
    for (let tries = 0; (await fixture.admin.zcard(queue)) < 1; tries += 1) {
      if (tries > 500) throw new Error('the fair waiter never joined the queue');
      await sleep(5);
    }
    expect(await holder.semaphore.release(first as PermitGrant)).toBe(true);
    // The place went to the fair waiter with the release: a barger finds none.
    const barged = await barger.semaphore.tryAcquire(permit(key, 'barger', 1, 1));
    if (barged) await barger.semaphore.release(barged);
    expect(barged).toBeNull();
    const grant = await waiting;
    expect(grant).not.toBeNull();
    if (grant) await fair.semaphore.release(grant);
  });

  it('serves a heavy waiter behind a process that releases and re-acquires in a tight loop, after a bounded burst', async () => {
    const key = `permit-barge:${run}:hog`;
    const hog = make();
    const waiter = make();
    let held = await hog.semaphore.tryAcquire(permit(key, 'hog-0', 1));
    expect(held).not.toBeNull();
    const queue = redisSemaphoreKeys('dlock:', key).keys[1];
    let waiterGot: PermitGrant | null | undefined;
    // The waiter needs every place; it gives them back at once, so that the hog's next acquisition does not wait out a lease.
    const waiting = waiter.semaphore.acquire(permit(key, 'waiter', 2), budget(4_000)).then(async (grant) => {
      waiterGot = grant;
      if (grant) await waiter.semaphore.release(grant);
      return grant;
    });
    for (let tries = 0; (await fixture.admin.zcard(queue)) < 1; tries += 1) {
      if (tries > 500) throw new Error('the waiter never joined the queue');
      await sleep(5);
    }
    let hogSections = 0;
    const deadline = Date.now() + 4_000;
    while (waiterGot === undefined && Date.now() < deadline && held) {
      await hog.semaphore.release(held);
      held = await hog.semaphore.acquire(permit(key, `hog-${hogSections + 1}`, 1), budget(4_000));
      if (!held) break;
      hogSections += 1;
      await sleep(1);
    }
    if (held) await hog.semaphore.release(held);
    const grant = await waiting;
    expect(grant).not.toBeNull();
    // Each hog section lasts ≥ 1 ms, so the default 5 ms window lets it take the places some 5 times after
    // the waiter became head; past the window the release hands them over. Counted in sections, not in time.
    expect(hogSections).toBeLessThanOrEqual(20);
  }, 15_000);
});
