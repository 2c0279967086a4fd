import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { LeaseGrant, LockRequest } from '@app/distributed-lock/locking/lock-lease';
import { redisLockKeys } from '@app/distributed-lock/strategies/redis/redis-keys';
import { ACQUIRE_SCRIPT, type AcquireArgs } from '@app/distributed-lock/strategies/redis/redis-lock.scripts';
import { RedisScript } from '@app/distributed-lock/strategies/redis/redis-script';
import { bargingStrategies } from '../support/barging-strategies';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const run = randomUUID().slice(0, 8);
const url = (): string => process.env.LOCK_TEST_REDIS_URL as string;
const request = (key: string, owner: string, ttlMs = 10_000): LockRequest => ({ key, owner, ttlMs, mode: 'exclusive' });
const budget = (timeoutMs: number): { signal: AbortSignal; timeoutMs: number } => ({ signal: new AbortController().signal, timeoutMs });

/**
 * `fair: false` (bounded barging, as Go's sync.Mutex): a contender that finds the lock free may take it
 * while the head of the queue has been head for less than `bargeWindowMs`; past that, the lock is handed
 * to the head. So a process that releases and re-acquires in a tight loop keeps it for a bounded burst,
 * never for ever.
 */
describe('Redis lock, fair: false (bounded barging)', () => {
  const fixture = bargingStrategies();
  const { make } = fixture;

  it('gives the lock to a waiter queued behind a holder that releases and re-acquires in a tight loop, after a bounded burst', async () => {
    const key = `barge:${run}:hog`;
    const hog = make();
    const waiter = make();
    let held = await hog.acquire(request(key, `hog-0`), budget(1_000));
    expect(held).not.toBeNull();
    // The waiter queues (its first script finds the lock held), then the hog loops: release, take again at
    // once from the same process (no pub/sub between), hold ≥ 1 ms. The waiter is woken by pub/sub only.
    const queue = redisLockKeys('dlock:', key).keys[1];
    let waiterGot: LeaseGrant | null | undefined;
    // The waiter gives the lock back at once, so that the hog's next acquisition does not wait out a lease.
    const waiting = waiter.acquire(request(key, 'waiter'), budget(4_000)).then(async (grant) => {
      waiterGot = grant;
      if (grant) await waiter.release(grant);
      return grant;
    });
    for (let tries = 0; (await fixture.admin.zcard(queue)) < 1; tries += 1) {
      if (tries > 500) throw new Error('the waiter never joined the queue');
      await sleep(5);
    }
    let hogSections = 0;
    const deadline = Date.now() + 4_000;
    while (waiterGot === undefined && Date.now() < deadline && held) {
      await hog.release(held);
      held = await hog.acquire(request(key, `hog-${hogSections + 1}`), budget(4_000));
      if (!held) break;
      hogSections += 1;
      await sleep(1);
    }
    if (held) await hog.release(held);
    const grant = await waiting;
    expect(grant).not.toBeNull();
    // Each hog section lasts ≥ 1 ms, so a 5 ms window lets it take the lock some 5 times after the waiter
    // became head; past the window the release hands over. Counted in sections, not in time: before bounded
    // barging, the hog won every race (hundreds of sections, or the waiter never got the lock at all).
    expect(hogSections).toBeLessThanOrEqual(20);
  }, 15_000);

  it('lets a contender take a free lock while the head of the queue is within its window, and hands it to the head once the window passed', async () => {
    const key = `barge:${run}:window`;
    const keys = redisLockKeys('dlock:', key);
    // A window wide enough for the steps inside it on a loaded machine (it must stay below the re-check).
    const holder = make({ bargeWindowMs: 1_500, recheckInterval: 3_000 });
    const barger = make({ bargeWindowMs: 1_500, recheckInterval: 3_000 });
    const first = await holder.acquire(request(key, 'holder'), budget(1_000));
    expect(first).not.toBeNull();
    // A waiter queued by the acquire script itself, on an inbox the test listens to: it never acts on what
    // it is told, so what the scripts decide is seen alone.
    const inbox = `dlock:inbox:test-${run}`;
    const heard: string[] = [];
    const subscriber = new Redis(url());
    try {
      await subscriber.subscribe(inbox);
      subscriber.on('message', (_channel: string, message: string) => heard.push(message));
      const args: AcquireArgs = ['head', keys.channel, 10_000, 1_500, '1', 30_000, 'x', inbox];
      const queued = await new RedisScript(ACQUIRE_SCRIPT).run(fixture.admin, keys.keys, args);
      expect(queued[0]).toBe(0);
      expect(await fixture.admin.zrange(keys.keys[1], '0', '-1')).toEqual(['head']);

      // Released while the head is within its window: the lock stays free (not handed to the head), and the
      // head is woken to try.
      expect(await holder.release(first as LeaseGrant)).toBe(true);
      expect(await fixture.admin.hget(keys.keys[0], 'o')).toBeNull();
      const barged = await barger.tryAcquire(request(key, 'barger'));
      expect(barged).not.toBeNull();
      expect(await fixture.admin.hget(keys.keys[0], 'o')).toBe('barger');
      expect(await fixture.admin.zrange(keys.keys[1], '0', '-1')).toEqual(['head']);
      expect(barged?.fencingToken).toBeGreaterThan(first?.fencingToken ?? Infinity);

      // Released again within the window: the head, already woken and not yet back, is not woken again.
      expect(await barger.release(barged as LeaseGrant)).toBe(true);
      const again = await barger.tryAcquire(request(key, 'barger-2'));
      expect(again).not.toBeNull();
      await sleep(100);
      expect(heard).toEqual(['w head']);

      // Past the window: the release hands the lock to the head, and a contender does not take it.
      await sleep(1_550);
      expect(await barger.release(again as LeaseGrant)).toBe(true);
      expect(await fixture.admin.hget(keys.keys[0], 'o')).toBe('head');
      expect(await barger.tryAcquire(request(key, 'late'))).toBeNull();
      await sleep(100);
      expect(heard).toHaveLength(2);
      expect(heard[1]).toMatch(/^g head \d+$/);
      expect(Number(heard[1].split(' ')[2])).toBeGreaterThan(again?.fencingToken ?? Infinity);
    } finally {
      subscriber.disconnect();
      await fixture.admin.del(...keys.keys);
    }
  });
});
