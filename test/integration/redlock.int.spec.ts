import { randomUUID } from 'node:crypto';
import { InvalidLockOptionsError, LockAcquireTimeoutError, LockBackendUnavailableError, LockLostError, LockManager, LockService, type LockHandle } from '@app/distributed-lock';
import { RedlockStrategy } from '@app/distributed-lock/strategies/redis';
import { redisLockKeys } from '@app/distributed-lock/strategies/redis/redis-keys';
import { Redis } from 'ioredis';
import { LockPermissionDeniedError } from '@app/distributed-lock';
import { redisAclRules } from '@app/distributed-lock/strategies/redis/redis-acl';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis';
import { runCrossProcessSession } from '../contract/cross-process';
import { LatencyProxy } from '../support/latency-proxy';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const run = randomUUID().slice(0, 8);
const urls = (): string[] => (process.env.LOCK_TEST_REDIS_URLS as string).split(',');
const NAMESPACE = 'dlock:redlock:';

/**
 * Local hand-over (lock cohorting): a release hands the lock to the next contender of the same process
 * without a round trip to the masters, within limits, and never a lock that may be lost.
 */
describe('Redlock: local hand-over', () => {
  let masters: Redis[];
  const managers: LockManager[] = [];
  const serviceOf = (options: ConstructorParameters<typeof RedlockStrategy>[0] = { connections: urls() }): LockService => {
    const manager = new LockManager(new RedlockStrategy(options));
    managers.push(manager);
    return new LockService(manager);
  };
  /**
   * What each master stores for the key: the id of the acquisition on the masters (the first master, which
   * keeps the line of contenders, stores it as the holder of a single-Redis lock).
   */
  const storedIds = (key: string): Promise<Array<string | null>> =>
    Promise.all(masters.map((master, i) => (i === 0 ? master.hget(redisLockKeys(NAMESPACE, key).keys[0], 'o') : master.get(redisLockKeys(NAMESPACE, key).keys[0]))));

  /** The grant comes with a majority's answers: waits (at most 2 s) for the last masters' votes to land too. */
  const everyMasterSet = async (key: string): Promise<void> => {
    for (let waited = 0; (await storedIds(key)).includes(null) && waited < 2_000; waited += 10) await sleep(10);
  };

  beforeAll(() => {
    masters = urls().map((url) => new Redis(url));
  });

  afterAll(async () => {
    await Promise.all(managers.map((manager) => manager.close()));
    masters.forEach((master) => master.disconnect());
  });

  it('hands the lock to a waiter of the same process without touching the masters, then gives it back to them', async () => {
    const locks = serviceOf({ connections: urls(), localHandover: { passes: 16, windowMs: 10_000 } });
    const key = `handover:${run}`;
    const first = await locks.acquire(key);
    // The grant comes with the majority's answers; the last masters may set the key a moment later.
    let idsWhileFirst = await storedIds(key);
    for (let waited = 0; idsWhileFirst.includes(null) && waited < 2_000; waited += 10) {
      await sleep(10);
      idsWhileFirst = await storedIds(key);
    }
    expect(new Set(idsWhileFirst).size).toBe(1);
    expect(idsWhileFirst[0]?.startsWith(`${first.owner}/`)).toBe(true); // the holder's acquisition id
    // A release on the masters announces itself on the key's channel; a hand-over does not.
    const listener = new Redis(urls()[1]);
    const announced: string[] = [];
    listener.on('message', (_channel: string, message: string) => announced.push(message));
    await listener.subscribe(redisLockKeys(NAMESPACE, key).channel);
    const second = locks.acquire(key, { waitTimeout: 5_000 });
    await sleep(50);
    await first.release();
    const secondLock = await second;
    expect(secondLock.isHeld).toBe(true);
    // Handed over here: the round that confirmed the lock renamed it to the successor's acquisition on every master.
    const idsWhileSecond = await storedIds(key);
    expect(new Set(idsWhileSecond).size).toBe(1);
    expect(idsWhileSecond[0]?.startsWith(`${secondLock.owner}/`)).toBe(true);
    expect(announced).toEqual([]);
    listener.disconnect();
    await secondLock.release();
    expect(await storedIds(key)).toEqual(masters.map(() => null)); // nobody waits: released on the masters
  });

  it('keeps mutual exclusion among many local contenders and lets a caller that released ask again', async () => {
    const locks = serviceOf();
    const key = `exclusion:${run}`;
    let inside = 0;
    let overlaps = 0;
    let sections = 0;
    await Promise.all(
      Array.from({ length: 12 }, async () => {
        for (let i = 0; i < 15; i += 1) {
          // Released and asked again at once, while others are handed the lock: must wait its turn.
          await locks.withLock(
            key,
            async () => {
              inside += 1;
              if (inside > 1) overlaps += 1;
              await sleep(i % 3);
              inside -= 1;
              sections += 1;
            },
            { waitTimeout: 20_000 },
          );
        }
      }),
    );
    expect(overlaps).toBe(0);
    expect(sections).toBe(180);
  });

  it('goes back to the masters after the pass limit, so another process gets its turn', async () => {
    const hot = serviceOf({ connections: urls(), localHandover: { passes: 3, windowMs: 10_000 } });
    const other = serviceOf();
    const key = `limit:${run}`;
    const ids = new Set<string>();
    let sections = 0;
    let stop = false;
    const hotWorkers = Array.from({ length: 4 }, async () => {
      while (!stop) {
        await hot.withLock(
          key,
          async () => {
            for (const id of await storedIds(key)) if (id !== null) ids.add(id);
            sections += 1;
          },
          { waitTimeout: 20_000 },
        );
      }
    });
    for (let waited = 0; sections < 12 && waited < 10_000; waited += 10) await sleep(10);
    // Four local contenders looping forever: without the limit the other process would never get in.
    const otherLock = await other.acquire(key, { waitTimeout: 10_000 });
    await otherLock.release();
    stop = true;
    await Promise.all(hotWorkers);
    // At most 3 hand-overs per acquisition on the masters: 12 sections took at least 3 acquisitions.
    expect(ids.size).toBeGreaterThanOrEqual(3);
  });

  it("wakes the head of a local line on the masters' release, also after a holder of its process", async () => {
    // Re-checks every 30 s: a contender that missed the masters' notification would time out (5 s).
    // No local hand-over: the holder here gives the key back to the masters, where another process waits.
    const here = serviceOf({ connections: urls(), recheckInterval: 30_000, localHandover: false });
    const elsewhere = serviceOf({ connections: urls(), recheckInterval: 30_000 });
    const key = `line-wake:${run}`;
    for (let round = 0; round < 3; round += 1) {
      const holder = await here.acquire(key);
      const takeAndGive = async (service: LockService): Promise<void> => (await service.acquire(key, { waitTimeout: 5_000 })).release().then(() => undefined);
      const remote = takeAndGive(elsewhere);
      await sleep(20);
      // The head of this process's line waits while a holder of this process has the key.
      const local = takeAndGive(here);
      await sleep(50);
      await holder.release();
      await Promise.all([remote, local]);
    }
  });

  it('never hands on a lock whose extension the masters refused', async () => {
    const locks = serviceOf();
    const key = `lost:${run}`;
    const holder: LockHandle = await locks.acquire(key, { ttl: 2_000, autoExtend: false });
    const waiter = locks.acquire(key, { waitTimeout: 10_000 });
    await sleep(50);
    await Promise.all(masters.map((master) => master.del(redisLockKeys(NAMESPACE, key).keys[0])));
    await expect(holder.extend()).rejects.toThrow(); // lost: the masters no longer have it
    await holder.release().catch(() => undefined);
    const waiterLock = await waiter;
    // The waiter took the lock on the masters itself (a fresh id on a majority), not a hand-over of a lost one.
    const stored = (await storedIds(key)).filter((id) => id !== null);
    expect(stored.length).toBeGreaterThanOrEqual(3);
    await waiterLock.release();
  });

  it('takes a lock right after it is created, while its connections are still being made', async () => {
    const locks = serviceOf();
    const lock = await locks.acquire(`fresh:${run}`, { waitTimeout: 5_000 });
    expect(lock.isHeld).toBe(true);
    await lock.release();
    const fresh = serviceOf();
    const tried = await fresh.tryAcquire(`fresh:${run}`);
    expect(tried?.isHeld).toBe(true);
    await tried?.release();
  });

  it('takes the lock, or leaves nothing behind, when this process stalls past the node timeout during a round', async () => {
    // A newcomer's usual case: a call followed by CPU work. The masters all say yes, but the
    // answers are read only after the 100 ms node timer has fired.
    const locks = serviceOf({ connections: urls(), nodeTimeout: 100 });
    const other = serviceOf();
    for (let i = 0; i < 4; i += 1) {
      const key = `stall:${run}:${i}`;
      const attempt = locks.tryAcquire(key).catch((error: unknown) => error);
      const until = Date.now() + 150;
      while (Date.now() < until) {
        // a synchronous stall of the event loop
      }
      const outcome = await attempt;
      if (outcome && typeof outcome === 'object' && 'release' in outcome) await (outcome as LockHandle).release();
      // Whatever the round decided, nobody is locked out for the lease's 30 s.
      const next = await other.acquire(key, { waitTimeout: 2_000 });
      await next.release();
      expect(await storedIds(key)).toEqual(masters.map(() => null));
    }
  });

  it('reports a lock that only a minority of masters still had as lost at the release', async () => {
    const locks = serviceOf();
    const other = serviceOf();
    const key = `minority:${run}`;
    let second: LockHandle | undefined;
    const outcome = await locks
      .withLock(key, async () => {
        // The grant comes with a majority's answers: wait for the last masters' votes to land, or one of them
        // could be set again after the deletion below (the holder would then still have a majority).
        await everyMasterSet(key);
        // Deleted on 3 of 5 masters (a restart that lost them, an operator): another process takes those 3.
        await Promise.all(masters.slice(0, 3).map((master) => master.del(redisLockKeys(NAMESPACE, key).keys[0])));
        second = await other.acquire(key, { waitTimeout: 5_000 });
        return 'done';
      })
      .catch((error: unknown) => error);
    expect(outcome).toBeInstanceOf(LockLostError);
    await second?.release();
  }, 20_000);

  it('never hands a lock that is gone on the masters to the next contender of its process', async () => {
    const locks = serviceOf({ connections: urls(), localHandover: { passes: 16, windowMs: 10_000 } });
    const other = serviceOf();
    const key = `handover-gone:${run}`;
    const first = await locks.acquire(key);
    let localInside = false;
    let remoteInside = false;
    let overlap = false;
    const local = locks.withLock(key, async () => {
      localInside = true;
      if (remoteInside) overlap = true;
      await sleep(50);
      localInside = false;
    }, { waitTimeout: 10_000 });
    await sleep(50);
    // The lock vanishes on every master; another process takes it.
    await Promise.all(masters.map((master) => master.del(redisLockKeys(NAMESPACE, key).keys[0])));
    const remote = await other.acquire(key, { waitTimeout: 5_000 });
    remoteInside = true;
    if (localInside) overlap = true;
    // The holder here releases while its neighbour waits: the masters are asked first, and say no.
    expect(await first.release()).toBe(false);
    await sleep(200);
    remoteInside = false;
    await remote.release();
    await local;
    expect(overlap).toBe(false);
  });

  describe('a release while masters are down or slow', () => {
    const holderBehindProxies = async (): Promise<{ proxies: LatencyProxy[]; locks: LockService }> => {
      // Each master behind a proxy of this test, to take two of them down and slow a third down after the grant.
      const proxies = urls().map((url) => new LatencyProxy({ host: new URL(url).hostname, port: Number(new URL(url).port) }, 0));
      const ports = await Promise.all(proxies.map((proxy) => proxy.start()));
      return { proxies, locks: serviceOf({ connections: ports.map((port) => `redis://127.0.0.1:${port}`), nodeTimeout: 100, localHandover: { passes: 16, windowMs: 10_000 } }) };
    };

    it('waits past the node timeout for the slow master: the lock was held, and is handed on (the fresh-clone CI\'s LOCK_LOST)', async () => {
      const { proxies, locks } = await holderBehindProxies();
      try {
        const key = `handover-slow:${run}`;
        const holder = await locks.acquire(key);
        await everyMasterSet(key);
        const waiter = locks.acquire(key, { waitTimeout: 5_000 });
        await sleep(20);
        await Promise.all([proxies[3].close(), proxies[4].close()]);
        proxies[2].oneWayDelayMs = 80; // 160 ms round trips, past the 100 ms node timeout
        await sleep(50);
        // Before: the round counted the slow master out, did not confirm, and the release said lost.
        expect(await holder.release()).toBe(true);
        const next = await waiter;
        expect(next.isHeld).toBe(true);
        await next.release();
      } finally {
        await Promise.all(proxies.map((proxy) => proxy.close().catch(() => undefined)));
      }
    }, 20_000);

    it('does not wait for a silent minority once a majority said yes: a release and a hand-over end before the 1 s wait', async () => {
      const { proxies, locks } = await holderBehindProxies();
      try {
        const key = `release-minority-silent:${run}`;
        const holder = await locks.acquire(key);
        await everyMasterSet(key);
        const waiter = locks.acquire(key, { waitTimeout: 5_000 });
        await sleep(20);
        proxies[4].oneWayDelayMs = 2_000; // one master hung for the holder: no answer for 4 s
        await sleep(20);
        const started = Date.now();
        expect(await holder.release()).toBe(true); // a hand-over to the waiter: four masters confirm it
        const next = await waiter;
        expect(await next.release()).toBe(true); // a plain release: four masters say yes
        expect(Date.now() - started).toBeLessThan(1_000);
      } finally {
        await Promise.all(proxies.map((proxy) => proxy.close().catch(() => undefined)));
      }
    }, 20_000);

    it('says it cannot tell, rather than held or lost, when the third master is silent past the wait', async () => {
      const { proxies, locks } = await holderBehindProxies();
      try {
        const key = `release-unknown:${run}`;
        const holder = await locks.acquire(key);
        await everyMasterSet(key);
        await Promise.all([proxies[3].close(), proxies[4].close()]);
        proxies[2].oneWayDelayMs = 1_000; // no answer within the release's 1 s wait
        await sleep(50);
        await expect(holder.release()).rejects.toBeInstanceOf(LockBackendUnavailableError);
      } finally {
        await Promise.all(proxies.map((proxy) => proxy.close().catch(() => undefined)));
      }
    }, 20_000);

    it('reports the lock lost when a majority says it was not the holder\'s, however many are slow: another client holds it', async () => {
      // The adversary's case: the holder's keys gone on M0..M2 (restarted empty), another client takes those
      // three, and M1, M2 are slow for the old holder. Counting a silent master as "held" called it held.
      const { proxies, locks } = await holderBehindProxies();
      const other = serviceOf();
      try {
        for (const withSuccessor of [true, false]) {
          const key = `release-lost-slow:${run}:${withSuccessor}`;
          const holder = await locks.acquire(key, { ttl: 10_000 });
          await everyMasterSet(key);
          await Promise.all([0, 1, 2].map((i) => masters[i].del(redisLockKeys(NAMESPACE, key).keys[0])));
          const taken = await other.tryAcquire(key, { ttl: 10_000 });
          expect(taken).not.toBeNull();
          const waiter = withSuccessor ? locks.acquire(key, { waitTimeout: 1_500, ttl: 10_000 }).catch((error: unknown) => error) : undefined;
          await sleep(50);
          proxies[1].oneWayDelayMs = 80;
          proxies[2].oneWayDelayMs = 80;
          await sleep(20);
          expect(await holder.release()).toBe(false);
          proxies[1].oneWayDelayMs = 0;
          proxies[2].oneWayDelayMs = 0;
          expect(await waiter).toSatisfy((outcome: unknown) => withSuccessor ? outcome instanceof LockAcquireTimeoutError : outcome === undefined);
          await taken?.release();
        }
      } finally {
        await Promise.all(proxies.map((proxy) => proxy.close().catch(() => undefined)));
      }
    }, 30_000);
  });

  it('validates its options', () => {
    expect(() => new RedlockStrategy({ connections: urls(), localHandover: { passes: -1 } })).toThrow(InvalidLockOptionsError);
    expect(() => new RedlockStrategy({ connections: urls(), localHandover: { passes: 1.5 } })).toThrow(/localHandover\.passes/);
    expect(() => new RedlockStrategy({ connections: urls(), localHandover: { windowMs: Number.NaN } })).toThrow(/localHandover\.windowMs/);
    expect(() => new RedlockStrategy({ connections: urls(), localHandover: true as unknown as false })).toThrow(/localHandover/);
    expect(() => new RedlockStrategy({ connections: urls(), localHandover: { pases: 3 } as unknown as { passes: number } })).toThrow(/localHandover\.pases/);
  });
});

/**
 * Across instances (each its own strategy, as separate app instances are), the first master keeps the
 * line: contenders are served in arrival order and only the next one asks the masters.
 */
describe('Redlock: the first master keeps the line', () => {
  let masters: Redis[];
  const managers: LockManager[] = [];
  const instance = (): LockService => {
    const manager = new LockManager(new RedlockStrategy({ connections: urls() }));
    managers.push(manager);
    return new LockService(manager);
  };
  const queued = (key: string): Promise<number> => masters[0].zcard(redisLockKeys(NAMESPACE, key).keys[1]);

  beforeAll(() => {
    masters = urls().map((url) => new Redis(url));
  });

  afterAll(async () => {
    await Promise.all(managers.map((manager) => manager.close()));
    masters.forEach((master) => master.disconnect());
  });

  it('serves contenders of separate instances in the order they came, and wakes only the next one', async () => {
    const key = `line:${run}`;
    const holder = await instance().acquire(key);
    const contenders = Array.from({ length: 5 }, () => instance());
    const order: number[] = [];
    const waits: Array<Promise<void>> = [];
    for (const [i, locks] of contenders.entries()) {
      waits.push(
        locks.withLock(key, () => void order.push(i), { waitTimeout: 10_000 }),
      );
      // Each one in line before the next comes.
      for (let waited = 0; (await queued(key)) < i + 1; waited += 5) {
        if (waited > 5_000) throw new Error(`contender ${i} never joined the line`);
        await sleep(5);
      }
    }
    // Nobody listens for releases on the masters: a release wakes the next contender alone, on its inbox.
    const { channel } = redisLockKeys(NAMESPACE, key);
    for (const master of masters) expect(await master.pubsub('NUMSUB', channel)).toEqual([channel, 0]);
    await holder.release();
    await Promise.all(waits);
    expect(order).toEqual([0, 1, 2, 3, 4]);
    expect(await queued(key)).toBe(0);
  }, 20_000);

  // A try that got the first master's vote keeps asking the others for a moment (a tie at a cron tick,
  // see the contract); against a real holder on the others it must give up and leave no vote behind.
  it('gives up a single try against a holder of the other masters, and leaves no vote on the first', async () => {
    const key = `try-first:${run}`;
    const holder = await instance().acquire(key);
    const { keys } = redisLockKeys(NAMESPACE, key);
    await masters[0].del(keys[0]); // the holder's vote on the first master is gone, as after a restart
    expect(await instance().tryAcquire(key, { reentrant: false })).toBeNull();
    expect(await masters[0].exists(keys[0])).toBe(0);
    expect(await Promise.all(masters.slice(1).map((master) => master.get(keys[0])))).not.toContain(null);
    await holder.release().catch(() => undefined);
  });

  it('gives up a place in line on timeout, and the next contender is served without waiting for it', async () => {
    const key = `line-timeout:${run}`;
    const holder = await instance().acquire(key);
    // Long enough for the patient one to join behind it on a loaded machine; the lines below are bounded.
    const quitter = instance().acquire(key, { waitTimeout: 2_000 }).catch((error: unknown) => error);
    const queueUntil = async (ok: (n: number) => boolean): Promise<number> => {
      let n = await queued(key);
      for (const deadline = Date.now() + 10_000; !ok(n) && Date.now() < deadline; n = await queued(key)) await sleep(5);
      return n;
    };
    expect(await queueUntil((n) => n >= 1)).toBe(1);
    const patient = instance().acquire(key, { waitTimeout: 10_000 });
    expect(await queueUntil((n) => n >= 2)).toBe(2);
    expect(await quitter).toBeInstanceOf(LockAcquireTimeoutError);
    // Its leave lands in the background, soon after the timeout.
    expect(await queueUntil((n) => n <= 1)).toBe(1);
    const started = Date.now();
    await holder.release();
    const lock = await patient;
    // Handed over at once, not after the quitter's claim ran out.
    expect(Date.now() - started).toBeLessThan(1_000);
    await lock.release();
  }, 20_000);
});

describe('Redlock: the first master down', () => {
  // Nobody keeps a line then: three processes trying one key at the same instant can split the other four
  // masters' votes. A tie is not a holder: each retries after a random pause, and one of them gets it.
  it('gives a free key tried once by three processes at the same instant to exactly one of them', async () => {
    const { winners, heldAtOnce } = await runCrossProcessSession('redlock (first master down)', `first-down-tick:${run}`, { processes: 3, workersPerProcess: 1, iterations: 3, tickRounds: 32 });
    expect(winners.flatMap((count, round) => (count === 0 ? [`round ${round}: nobody`] : []))).toEqual([]);
    expect([...heldAtOnce].map((round) => `round ${round}: ${winners[round]} at once`)).toEqual([]);
  }, 60_000);

  it('grants on the other masters and leaves no unhandled rejection behind', async () => {
    const unhandled: unknown[] = [];
    const record = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', record);
    // Nothing listens on the first master's port: its connection and its subscription both fail.
    const manager = new LockManager(new RedlockStrategy({ connections: ['redis://127.0.0.1:1', ...urls().slice(0, 2)], nodeTimeout: 50 }), { operationTimeout: 1_000 });
    const locks = new LockService(manager);
    try {
      const key = `first-down:${run}`;
      const holder = await locks.acquire(key);
      // A contender waits while the first master's line cannot be kept: plain Redlock on the other two.
      const waiter = locks.acquire(key, { waitTimeout: 5_000, reentrant: false });
      await sleep(100);
      await holder.release();
      await (await waiter).release();
      await sleep(2_000); // the failed subscription gives up after its retries
    } finally {
      await manager.close();
      process.off('unhandledRejection', record);
    }
    expect(unhandled).toEqual([]);
  }, 20_000);
});

/**
 * Masters whose only user has the ACL rules of docs/security.md for Redlock: the lock works under exactly
 * those, and a user missing one gets LockPermissionDeniedError naming them, not a wait for a majority.
 */
describe('Redlock under an ACL user', () => {
  const rules = redisAclRules(NAMESPACE, true);
  const mastersWith = (userRules: string): Promise<PrivateRedis[]> =>
    Promise.all([0, 1, 2].map(() => startPrivateRedis(['--user', 'default', 'on', 'nopass', ...userRules.split(' ')])));

  it('locks with exactly the rules of the recipe, and says what to grant when one is missing', async () => {
    const complete = await mastersWith(rules);
    const lacking = await mastersWith(rules.replace(/\+set /, ''));
    const managers = [complete, lacking].map((masters) => new LockManager(new RedlockStrategy({ connections: masters.map((m) => m.url) }), { operationTimeout: 3_000 }));
    try {
      const [allowed, refused] = managers.map((manager) => new LockService(manager));
      const lock = await allowed.acquire(`acl:${run}`);
      await lock.extend(10_000);
      expect(await lock.release()).toBe(true);
      const error = await refused.acquire(`acl:${run}`, { waitTimeout: 10_000 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockPermissionDeniedError);
      expect(error).toMatchObject({ strategy: 'redlock', grant: `ACL SETUSER <user> ${rules}` });
      await expect(refused.tryAcquire(`acl:${run}`)).rejects.toBeInstanceOf(LockPermissionDeniedError);
    } finally {
      await Promise.all(managers.map((manager) => manager.close().catch(() => undefined)));
      await Promise.all([...complete, ...lacking].map((master) => master.stop()));
    }
  }, 30_000);
});
