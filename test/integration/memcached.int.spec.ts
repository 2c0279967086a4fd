import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { InvalidLockKeyError, InvalidLockOptionsError, LockLostError, LockManager, LockService, type LockHandle } from '@app/distributed-lock';
import type { LeaseGrant } from '@app/distributed-lock/strategy-kit';
import { MemcachedLockStrategy } from '@app/distributed-lock/strategies/memcached';
import { memcachedLockKey } from '@app/distributed-lock/strategies/memcached/memcached-keys';
import { MEMCACHED_MAX_RELATIVE_EXPIRY_S } from '@app/distributed-lock/strategies/memcached/memcached-expiry';
import type { MemcacheClient } from 'memcache-client';
import { memcachedServer, rawMemcached } from '../support/memcached-subject';
import { closedPort } from '../support/silent-server';
import { memcachedArgs } from '../../scripts/services/server-kinds';
import { probe, waitUntil } from '../../scripts/services/probes';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const run = randomUUID().slice(0, 8);

/** What memcached holds under a lock's key right now (the owner id), read with a client of its own. */
async function ownerOnServer(raw: MemcacheClient, key: string): Promise<unknown> {
  const item: { value: unknown } | undefined = await raw.gets<unknown>(memcachedLockKey('dlock:', key));
  return item?.value;
}

/**
 * When an item left the server, bracketed by what a poll every 10 ms saw (Date.now()): it was deleted after
 * `lastSeenSentAt` (a get sent then still found it) and before `goneAnsweredAt` (a reply said it was gone).
 * A stalled test process only widens the bracket, so bounds checked on its correct side cannot fail on a
 * loaded machine: an early deletion shows as `goneAnsweredAt` too early, a late one as `lastSeenSentAt` too late.
 */
async function expiryOf(raw: MemcacheClient, memcachedKey: string, withinMs: number): Promise<{ lastSeenSentAt: number; goneAnsweredAt: number }> {
  const deadline = Date.now() + withinMs;
  let lastSeenSentAt = Number.NaN;
  for (;;) {
    const sentAt = Date.now();
    const item: unknown = await raw.gets(memcachedKey);
    if (item === undefined) return { lastSeenSentAt, goneAnsweredAt: Date.now() };
    lastSeenSentAt = sentAt;
    if (Date.now() > deadline) throw new Error(`${memcachedKey} still there after ${withinMs} ms`);
    await sleep(10);
  }
}

describe('memcached strategy against a real memcached', () => {
  let raw: MemcacheClient;
  const managers: LockManager[] = [];
  let strategy: MemcachedLockStrategy;
  let locks: LockService;
  let contender: LockService;

  const service = (options: ConstructorParameters<typeof MemcachedLockStrategy>[0] = { connection: memcachedServer() }): { strategy: MemcachedLockStrategy; locks: LockService; manager: LockManager } => {
    const created = new MemcachedLockStrategy(options);
    const manager = new LockManager(created);
    managers.push(manager);
    return { strategy: created, locks: new LockService(manager), manager };
  };

  beforeAll(() => {
    raw = rawMemcached();
    ({ strategy, locks } = service());
    ({ locks: contender } = service());
  });

  afterAll(async () => {
    await Promise.all(managers.map((manager) => manager.close().catch(() => undefined)));
    raw.shutdown();
  });

  describe('expiry in whole seconds', () => {
    it('a plain `add` with a 1 s expiry can vanish long before 1 s (why a lease is rounded up and seconds are added)', async () => {
      // memcached's clock moves once a second: where in that second an item is stored decides how much of
      // its first second it gets. Ten adds spread over one second: at least one lands late in a second.
      const lives = await Promise.all(
        Array.from({ length: 10 }, async (_, i) => {
          await sleep(i * 100);
          const key = `raw-expiry:${run}:${i}`;
          const sentAt = Date.now();
          await raw.add(key, 'x', { lifetime: 1 });
          const storedAt = Date.now();
          const { lastSeenSentAt, goneAnsweredAt } = await expiryOf(raw, key, 3_000);
          return { atMost: goneAnsweredAt - sentAt, atLeast: lastSeenSentAt - storedAt };
        }),
      );
      expect(Math.min(...lives.map((life) => life.atMost))).toBeLessThan(900);
      // At most the second, and what a late clock tick on a loaded machine adds.
      expect(Math.max(...lives.filter((life) => !Number.isNaN(life.atLeast)).map((life) => life.atLeast))).toBeLessThanOrEqual(1_000 + 400);
    });

    it('keeps every lease on the server until the holder’s own lease ends, wherever in the second it was granted, and frees it at most ⌈ttl⌉ + 2 s later', async () => {
      const outcomes = await Promise.all(
        Array.from({ length: 10 }, async (_, i) => {
          await sleep(i * 100);
          const key = `expiry:${run}:${i}`;
          const sentAt = Date.now();
          const grant = await strategy.tryAcquire({ key, owner: `owner-${i}`, ttlMs: 1_000, mode: 'exclusive' });
          if (!grant) throw new Error(`not granted: ${key}`);
          const owner = await ownerOnServer(raw, key);
          // The holder's own view: the lease ends at expiresAt. The server must still hold it then: no reply
          // may say the item is gone before expiresAt (polled from the grant on, so a late timer cannot make
          // the check arrive after a deletion that was on time).
          const { lastSeenSentAt, goneAnsweredAt } = await expiryOf(raw, memcachedLockKey('dlock:', key), 5_000);
          return { owner, grantOwner: grant.owner, expiresAt: grant.expiresAt, goneAnsweredAt, freedAfterAtLeast: lastSeenSentAt - sentAt };
        }),
      );
      for (const outcome of outcomes) {
        expect(outcome.owner).toBe(outcome.grantOwner);
        expect(outcome.goneAnsweredAt).toBeGreaterThanOrEqual(outcome.expiresAt);
        // ⌈1 000 ms⌉ + 2 s, plus a late clock tick on a loaded machine.
        expect(outcome.freedAfterAtLeast).toBeLessThan(3_000 + 400);
      }
    });

    it('keeps a 300 ms lease alive with the watchdog for 3 s (ten times the lease, past several server expiries)', async () => {
      const k = `watchdog:${run}`;
      const lock = await locks.acquire(k, { ttl: 300, autoExtend: true });
      for (let i = 0; i < 6; i += 1) {
        await sleep(500);
        expect(await contender.tryAcquire(k)).toBeNull();
        expect(await ownerOnServer(raw, k)).toBe(lock.owner);
      }
      expect(lock.signal.aborted).toBe(false);
      expect(await lock.release()).toBe(true);
      expect(await ownerOnServer(raw, k)).toBeUndefined();
    }, 10_000);

    it('refuses, before any command, a lease memcached would read as a Unix time (above 30 days)', async () => {
      const k = `thirty-days:${run}`;
      const thirtyOneDays = 31 * 24 * 3_600_000;
      await expect(strategy.tryAcquire({ key: k, owner: 'o', ttlMs: thirtyOneDays, mode: 'exclusive' })).rejects.toBeInstanceOf(InvalidLockOptionsError);
      expect(await ownerOnServer(raw, k)).toBeUndefined();
      // What would have happened: memcached takes 30 days and one second as a time in January 1970, long
      // past, and stores the item already expired: a lock that is no lock.
      const rawKey = `raw-thirty-days:${run}`;
      expect(await raw.add(rawKey, 'x', { lifetime: MEMCACHED_MAX_RELATIVE_EXPIRY_S + 1 })).toEqual(['STORED']);
      expect(await raw.gets(rawKey)).toBeUndefined();
    });

    it('stores the longest lease the lock service accepts (about 24.8 days) as a duration', async () => {
      const k = `longest:${run}`;
      const lock = await locks.acquire(k, { ttl: 2_147_483_647 });
      await sleep(1_100);
      expect(await ownerOnServer(raw, k)).toBe(lock.owner);
      expect(await lock.release()).toBe(true);
    });
  });

  describe('owner checks are compare-and-sets', () => {
    it('a holder whose item was deleted (evicted) and taken by another neither releases nor extends the new holder’s lock', async () => {
      const k = `stale-holder:${run}`;
      const stale = await strategy.tryAcquire({ key: k, owner: `stale-${run}`, ttlMs: 60_000, mode: 'exclusive' });
      if (!stale) throw new Error('not granted');
      await raw.delete(memcachedLockKey('dlock:', k));
      const next = await contender.acquire(k, { ttl: 60_000 });
      expect(await strategy.release(stale)).toBe(false);
      expect(await strategy.extend(stale, 60_000)).toBeNull();
      expect(await ownerOnServer(raw, k)).toBe(next.owner);
      expect(await next.release()).toBe(true);
    });

    it('a release racing extensions of the same lease ends released, whichever compare-and-set lands first', async () => {
      for (let round = 0; round < 20; round += 1) {
        const k = `race:${run}:${round}`;
        const grant = (await strategy.tryAcquire({ key: k, owner: `racer-${round}`, ttlMs: 10_000, mode: 'exclusive' })) as LeaseGrant;
        const extensions = Array.from({ length: 4 }, () => strategy.extend(grant, 10_000));
        const released = strategy.release(grant);
        const more = Array.from({ length: 2 }, () => strategy.extend(grant, 10_000));
        expect(await released).toBe(true);
        await Promise.all([...extensions, ...more]);
        expect(await ownerOnServer(raw, k)).toBeUndefined();
      }
    });

    it('lets exactly one of eight clients take a free lock each round', async () => {
      const clients = Array.from({ length: 8 }, () => service().strategy);
      for (let round = 0; round < 10; round += 1) {
        const k = `one-winner:${run}:${round}`;
        const grants = await Promise.all(clients.map((client, i) => client.tryAcquire({ key: k, owner: `c${i}`, ttlMs: 10_000, mode: 'exclusive' })));
        const winners = grants.filter((grant): grant is LeaseGrant => grant !== null);
        expect(winners).toHaveLength(1);
        expect(await ownerOnServer(raw, k)).toBe(winners[0].owner);
        expect(await clients[0].release(winners[0])).toBe(true);
      }
    });
  });

  describe('a lock deleted behind its holder (eviction, an operator, a restart)', () => {
    it('is reported lost at the next extension: the watchdog’s compare-and-set finds the item gone', async () => {
      const k = `evicted:${run}`;
      const lock = await locks.acquire(k, { ttl: 900, autoExtend: true });
      const lostReasons: string[] = [];
      managers[0].events.on('lost', (event) => {
        if (event.key === k) lostReasons.push(event.reason);
      });
      await sleep(100);
      const deletedAt = Date.now();
      await raw.delete(memcachedLockKey('dlock:', k));
      while (!lock.signal.aborted && Date.now() - deletedAt < 3_000) await sleep(10);
      expect(lock.signal.reason).toBeInstanceOf(LockLostError);
      expect((lock.signal.reason as LockLostError).reason).toBe('extension-refused');
      expect(lostReasons).toEqual(['extension-refused']);
      // Within one watchdog interval (a third of the lease) and a round trip, and what a stalled timer on a
      // loaded machine adds: before the lease would have ended had it been kept.
      expect(Date.now() - deletedAt).toBeLessThan(900 + 300);
    });
  });

  describe('keys', () => {
    it('stores odd keys escaped, each its own lock, and an escaped-looking key is a lock of its own', async () => {
      const keys = [`${run} a b`, `${run} a%20b`, `${run}:k`, `${run}:k `, `${run}:é`, `${run}:%C3%A9`, `${run}:\uFFFD`];
      const held = await Promise.all(keys.map((k) => locks.acquire(k)));
      for (const [i, k] of keys.entries()) {
        expect(await ownerOnServer(raw, k)).toBe(held[i].owner);
        expect(await contender.tryAcquire(k)).toBeNull();
      }
      expect(memcachedLockKey('dlock:', `${run} a b`)).toBe(`dlock:${run}%20a%20b`);
      await Promise.all(held.map((lock) => lock.release()));
    });

    it('takes a key of exactly 250 bytes with its namespace, and refuses one byte more before touching the server', async () => {
      const longest = `${run}:${'x'.repeat(250 - 'dlock:'.length - run.length - 1)}`;
      expect(memcachedLockKey('dlock:', longest)).toHaveLength(250);
      const lock = await locks.acquire(longest);
      expect(await ownerOnServer(raw, longest)).toBe(lock.owner);
      await lock.release();
      await expect(locks.acquire(`${longest}x`)).rejects.toBeInstanceOf(InvalidLockKeyError);
      // Three bytes per escaped space: 82 of them do not fit, although the key is short as text.
      await expect(locks.acquire(`k${' '.repeat(81)}k`)).rejects.toThrow(/at most 250 bytes/);
    });

    it('keeps locks of two namespaces apart on one server', async () => {
      const other = service({ connection: memcachedServer(), namespace: `other-${run}:` }).locks;
      const k = `namespaced:${run}`;
      const a = await locks.acquire(k);
      const b = await other.tryAcquire(k);
      expect(b).not.toBeNull();
      await Promise.all([a.release(), b?.release()]);
    });
  });

  describe('the per-process line (transfer)', () => {
    /** A real client whose `add` calls are counted: the polls of the backend. */
    function countingClient(): { client: MemcacheClient; adds: () => number; reset: () => void } {
      const client = rawMemcached();
      let adds = 0;
      const counted = new Proxy(client, {
        get(target, property, receiver) {
          const value: unknown = Reflect.get(target, property, receiver);
          if (property === 'add' && typeof value === 'function') {
            return (...args: unknown[]) => {
              adds += 1;
              return (value as (...a: unknown[]) => unknown).apply(target, args);
            };
          }
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
      return { client: counted, adds: () => adds, reset: () => (adds = 0) };
    }

    it('hands a released lock to the next contender of the process in one compare-and-set: the waiter never polls', async () => {
      const counting = countingClient();
      // A window longer than the test's pause: by default the line stops handing on 50 ms after the lock
      // was taken from memcached, and the next contender polls (other processes get their turn).
      const here = service({ client: counting.client, localHandover: { passes: 64, windowMs: 5_000 } }).locks;
      const k = `line:${run}`;
      try {
        const holder = await here.acquire(k);
        counting.reset();
        let waiterHolds = false;
        const waiting = here.acquire(k, { waitTimeout: 5_000 }).then((lock) => {
          waiterHolds = true;
          return lock;
        });
        await sleep(300);
        expect(waiterHolds).toBe(false);
        await holder.release();
        const next: LockHandle = await waiting;
        expect(await ownerOnServer(raw, k)).toBe(next.owner);
        expect(counting.adds()).toBe(0);
        await next.release();

        // Behind a holder of another process, the first contender here polls memcached.
        const remote = await contender.acquire(k);
        counting.reset();
        const behindRemote = here.acquire(k, { waitTimeout: 5_000 });
        await sleep(300);
        await remote.release();
        await (await behindRemote).release();
        expect(counting.adds()).toBeGreaterThan(1);
      } finally {
        counting.client.shutdown();
      }
    });

    it('never lets two contenders in at once, 8 writers of one process and 2 of another', async () => {
      const here = service().locks;
      const k = `line-mix:${run}`;
      let inside = 0;
      let overlaps = 0;
      let sections = 0;
      await Promise.all(
        Array.from({ length: 10 }, async (_, worker) => {
          for (let i = 0; i < 10; i += 1) {
            await (worker < 2 ? contender : here).withLock(
              k,
              async () => {
                inside += 1;
                if (inside > 1) overlaps += 1;
                await sleep(worker % 3);
                inside -= 1;
                sections += 1;
              },
              { waitTimeout: 30_000 },
            );
          }
        }),
      );
      expect(overlaps).toBe(0);
      expect(sections).toBe(100);
    }, 40_000);
  });
});

/**
 * memcached started with -C keeps no CAS values: every `gets` answers 0 and every `cas` is refused, so no
 * lock could ever be extended or released there. The strategy says so at the first read instead of
 * re-reading and retrying until its retries run out.
 */
describe('memcached strategy against a memcached without CAS (-C)', () => {
  let server: ChildProcess;
  let address: string;
  let strategy: MemcachedLockStrategy;

  beforeAll(async () => {
    const port = await closedPort();
    server = spawn('memcached', [...memcachedArgs(port), '-C'], { stdio: 'ignore' });
    address = `127.0.0.1:${port}`;
    await waitUntil(`memcached -C on ${address}`, async () => (await probe(port, 'version\r\n', 1_000, /\r\n/))?.startsWith('VERSION ') ?? false, 10_000);
    strategy = new MemcachedLockStrategy({ connection: address });
  }, 20_000);

  afterAll(async () => {
    await strategy?.close();
    server?.kill('SIGKILL');
  });

  it('answers every gets with the CAS value 0 and refuses every cas, even one sending that 0 back', async () => {
    const raw = rawMemcached(address);
    try {
      await raw.add(`nocas:${run}`, 'a', { lifetime: 60 });
      const read: { casUniq: string | number } | undefined = await raw.gets(`nocas:${run}`);
      expect(String(read?.casUniq)).toBe('0');
      await expect(raw.cas(`nocas:${run}`, 'b', { casUniq: read?.casUniq ?? '0', lifetime: 60 })).rejects.toThrow(/EXISTS/);
    } finally {
      raw.shutdown();
    }
  });

  it('takes a lock, and says at the first extension or release that memcached runs without CAS', async () => {
    const grant = await strategy.tryAcquire({ key: `nocas-lock:${run}`, owner: 'o', ttlMs: 5_000, mode: 'exclusive' });
    if (!grant) throw new Error('not granted');
    await expect(strategy.extend(grant, 5_000)).rejects.toThrow(/without CAS \(-C\)/);
    await expect(strategy.release(grant)).rejects.toThrow(/without CAS \(-C\)/);
  });
});

