import { randomUUID } from 'node:crypto';
import { InvalidLockOptionsError, LockLostError, LockManager, LockService, type LockHandle } from '@app/distributed-lock';
import { ZooKeeperLockStrategy, type ZooKeeperLeaseGrant, type ZooKeeperLockStrategyOptions } from '@app/distributed-lock/strategies/zookeeper';
import type { ZooKeeperLockClient } from '@app/distributed-lock/strategies/zookeeper/zookeeper-client.type';
import { zkFencingToken } from '@app/distributed-lock/strategies/zookeeper/zookeeper-hold-token';
import { zkLockPath } from '@app/distributed-lock/strategies/zookeeper/zookeeper-paths';
import { ZooKeeperSession } from '@app/distributed-lock/strategies/zookeeper/zookeeper-session';

// Lock cohorting on ZooKeeper (`localHandover`): a release passes the node to the next request of the same
// strategy instance with one write; the instances of other processes (other strategy instances here, each
// with its own session) get the lock back within the bounds, with tokens above every pass.

const BASE = '/dlock-cohort';
const run = randomUUID().slice(0, 8);
const connect = (): string => process.env.LOCK_TEST_ZOOKEEPER as string;
const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));
const lossOf = (lock: LockHandle): Promise<unknown> =>
  new Promise((resolve) => {
    if (lock.signal.aborted) resolve(lock.signal.reason);
    lock.signal.addEventListener('abort', () => resolve(lock.signal.reason));
  });

describe('ZooKeeper lock cohorting (localHandover)', () => {
  let admin: ZooKeeperSession;
  let client: ZooKeeperLockClient;
  const managers: LockManager[] = [];
  const instance = (options: Partial<ZooKeeperLockStrategyOptions> = {}): LockService => {
    const manager = new LockManager(new ZooKeeperLockStrategy({ connect: connect(), basePath: BASE, localHandover: {}, ...options }));
    managers.push(manager);
    return new LockService(manager);
  };
  const contenders = async (key: string): Promise<string[]> => client.get_children(zkLockPath(BASE, key), false).catch(() => []);
  const nodeOf = (lock: LockHandle): string => (lock.grant as ZooKeeperLeaseGrant).znode;
  /**
   * An instance whose every pass stays within its window, with the client of its session, whose calls a
   * test delays or puts in order to time a pass against an extension, a lease's end or a break.
   */
  const instanceWithItsClient = async (): Promise<{ locks: LockService; own: ZooKeeperLockClient }> => {
    const strategy = new ZooKeeperLockStrategy({ connect: connect(), basePath: BASE, localHandover: { windowMs: 10_000 } });
    const manager = new LockManager(strategy);
    managers.push(manager);
    return { locks: new LockService(manager), own: await (strategy as unknown as { session: ZooKeeperSession }).session.client() };
  };

  beforeAll(async () => {
    admin = new ZooKeeperSession({ connect: connect() }, 'zookeeper-cohort-admin', 10_000);
    client = await admin.client();
  });

  afterAll(async () => {
    await Promise.all(managers.map((manager) => manager.close()));
    await admin.close();
  });

  it('passes a released lock to the next request of the instance, in arrival order, on the same node, with higher tokens; only the holder is in ZooKeeper', async () => {
    // A window long enough for the queries made in the sections: every pass stays within it.
    const locks = instance({ localHandover: { windowMs: 10_000 } });
    const key = `order:${run}`;
    const holder = await locks.acquire(key);
    const order: number[] = [];
    const held: LockHandle[] = [holder];
    const waiters = [0, 1, 2, 3].map(async (index) => {
      const lock = await locks.acquire(key, { waitTimeout: 5_000 });
      order.push(index);
      held.push(lock);
      expect(lock.isHeld).toBe(true);
      // The query names this holder and its exact token, read off the node's data and czxid.
      const seen = await locks.query(key);
      expect(seen.held.map((hold) => [hold.owner.id, hold.fencingToken])).toEqual([[lock.owner, lock.fencingToken]]);
      await lock.release();
    });
    await sleep(100);
    // The holder is of this instance: its waiters wait in the process, none in ZooKeeper's line.
    expect(await contenders(key)).toHaveLength(1);
    await holder.release();
    await Promise.all(waiters);
    expect(order).toEqual([0, 1, 2, 3]);
    expect(new Set(held.map(nodeOf)).size).toBe(1);
    const tokens = held.map((lock) => lock.fencingToken as number);
    for (let i = 1; i < tokens.length; i += 1) expect(tokens[i]).toBe(tokens[i - 1] + 1);
    expect(await contenders(key)).toEqual([]);
  });

  it('gives a waiter of another instance, queued before the passes, a token above every pass', async () => {
    const locks = instance({ localHandover: { passes: 3, windowMs: 10_000 } });
    const elsewhere = instance();
    const key = `queued-first:${run}`;
    const holder = await locks.acquire(key);
    const theirs = elsewhere.acquire(key, { waitTimeout: 5_000 });
    await sleep(100);
    expect(await contenders(key)).toHaveLength(2);
    const ours: LockHandle[] = [];
    const waiters = [0, 1, 2, 3, 4].map(async () => {
      const lock = await locks.acquire(key, { waitTimeout: 5_000 });
      ours.push(lock);
      await sleep(2);
      await lock.release();
    });
    await sleep(50);
    await holder.release();
    const other = await theirs;
    // The holder's grant and three passes, all fenced below the waiter that queued before them.
    expect(ours.length).toBe(3);
    const passed = [holder, ...ours].map((lock) => lock.fencingToken as number);
    expect(other.fencingToken).toBeGreaterThan(Math.max(...passed));
    expect(passed[3]).toBe(passed[0] + 3);
    await other.release();
    await Promise.all(waiters);
    expect(ours.at(-1)?.fencingToken).toBeGreaterThan(other.fencingToken as number);
  });

  it('lets a waiter of another instance in once the window since the lock came from the queue has passed, however many ask here', async () => {
    const locks = instance({ localHandover: { passes: 127, windowMs: 60 } });
    const elsewhere = instance();
    const key = `window:${run}`;
    let ours = 0;
    let stop = false;
    // Three requests of the instance keep asking: each release has a successor here to pass the lock to.
    const loops = [0, 1, 2].map(async () => {
      while (!stop) {
        const lock = await locks.acquire(key, { waitTimeout: 10_000 });
        ours += 1;
        await sleep(2);
        await lock.release();
      }
    });
    try {
      while (ours === 0) await sleep(5);
      const other = await elsewhere.acquire(key, { waitTimeout: 5_000 });
      expect(other.isHeld).toBe(true);
      await other.release();
    } finally {
      stop = true;
      await Promise.all(loops);
    }
  });

  it('does not tell a holder its own pass was a break: a passed lock is kept and extended past its node watch', async () => {
    const locks = instance();
    const key = `own-write:${run}`;
    const holder = await locks.acquire(key);
    const next = locks.acquire(key, { waitTimeout: 5_000, ttl: 1_000 });
    await sleep(50);
    await holder.release();
    const successor = await next;
    // Past the delayed watch on the node (50 ms) and a watchdog extension (a third of the lease).
    await sleep(600);
    expect(successor.signal.aborted).toBe(false);
    expect(successor.isHeld).toBe(true);
    expect(await successor.release()).toBe(true);
  });

  it('reports a passed lock whose node is deleted behind its successor, and the next holder gets a higher token', async () => {
    const locks = instance();
    const elsewhere = instance();
    const key = `deleted:${run}`;
    const holder = await locks.acquire(key);
    const next = locks.acquire(key, { waitTimeout: 5_000 });
    await sleep(50);
    await holder.release();
    const successor = await next;
    await sleep(100); // its node is watched
    await client.delete_(nodeOf(successor), -1);
    const reason = await lossOf(successor);
    expect(reason).toBeInstanceOf(LockLostError);
    expect((reason as LockLostError).reason).toBe('removed');
    const theirs = await elsewhere.acquire(key, { waitTimeout: 2_000 });
    expect(theirs.fencingToken).toBeGreaterThan(successor.fencingToken as number);
    expect(await successor.release()).toBe(false);
    expect(await theirs.release()).toBe(true);
  });

  for (const when of [0, 100]) {
    it(`tells a passed holder it was broken ${when === 0 ? 'before' : 'after'} its node is watched, and fences it below the next holder`, async () => {
      const locks = instance();
      const elsewhere = instance();
      const key = `broken-${when}:${run}`;
      const holder = await locks.acquire(key);
      const next = locks.acquire(key, { waitTimeout: 5_000 });
      await sleep(50);
      await holder.release();
      const successor = await next;
      await sleep(when);
      const ended = await elsewhere.breakLock(key, { reason: 'test' });
      expect(ended.map((hold) => [hold.owner.id, hold.fencingToken])).toEqual([[successor.owner, successor.fencingToken]]);
      const reason = await lossOf(successor);
      expect(reason).toBeInstanceOf(LockLostError);
      expect((reason as LockLostError).reason).toBe('broken');
      const theirs = await elsewhere.acquire(key, { waitTimeout: 2_000 });
      expect(theirs.fencingToken).toBeGreaterThan(successor.fencingToken as number);
      await theirs.release();
    });
  }

  it('does not pass a lock the holder no longer has: the waiter asks ZooKeeper and waits for whoever holds it', async () => {
    const locks = instance();
    const elsewhere = instance();
    const key = `not-ours:${run}`;
    const holder = await locks.acquire(key);
    await sleep(100);
    await client.delete_(nodeOf(holder), -1);
    await lossOf(holder);
    const theirs = await elsewhere.acquire(key, { waitTimeout: 2_000 });
    const ours = locks.acquire(key, { waitTimeout: 5_000 });
    expect(await holder.release()).toBe(false);
    await sleep(100);
    expect(theirs.isHeld).toBe(true);
    await theirs.release();
    const lock = await ours;
    expect(lock.fencingToken).toBeGreaterThan(theirs.fencingToken as number);
    await lock.release();
  });

  // Adversary: the extension armed the lease timer of the hold it had read, which the pass had forgotten; at
  // that lease's end the timer deleted the node, which the passed holder had, and another instance got in.
  it('does not let an extension still on its way at the pass end the passed hold at the old lease\'s end', async () => {
    const { locks, own } = await instanceWithItsClient();
    const realExists = own.exists.bind(own);
    const elsewhere = instance();
    const key = `extend-at-pass:${run}`;
    const holder = await locks.acquire(key, { ttl: 600 });
    const next = locks.acquire(key, { waitTimeout: 5_000, ttl: 5_000 });
    await sleep(50);
    // The extension's look at the node is answered only after the pass.
    own.exists = (async (path: string, watch: false) => {
      const stat = await realExists(path, watch);
      await sleep(100);
      return stat;
    }) as typeof own.exists;
    let successor: LockHandle;
    try {
      const extending = holder.extend(600).catch((error: unknown) => error);
      await holder.release();
      successor = await next;
      await extending;
    } finally {
      own.exists = realExists;
    }
    const theirs = elsewhere.acquire(key, { waitTimeout: 1_500 }).catch((error: unknown) => error);
    // Past the old lease's end (600 ms from the extension) and the passed hold's watch.
    await sleep(1_000);
    expect(successor.signal.aborted).toBe(false);
    expect(successor.isHeld).toBe(true);
    expect(await successor.release()).toBe(true);
    const other = await theirs;
    expect(other).not.toBeInstanceOf(Error);
    await (other as LockHandle).release();
  });

  // Adversary: the old holder's lease ran out while its pass was on its way; its end deleted the node the
  // pass had just given, and another instance held while the passed holder was not told for 50 ms.
  it('does not end a pass on its way at the old lease\'s end: the passed holder keeps the node', async () => {
    const { locks, own } = await instanceWithItsClient();
    const elsewhere = instance();
    const key = `expiry-at-pass:${run}`;
    const realSet = own.set.bind(own);
    const holder = await locks.acquire(key, { ttl: 300, autoExtend: false });
    const next = locks.acquire(key, { waitTimeout: 5_000, ttl: 5_000 });
    await sleep(50);
    let theirsGranted = false;
    const theirs = elsewhere.acquire(key, { waitTimeout: 5_000 }).then((lock) => {
      theirsGranted = true;
      return lock;
    });
    await sleep(100);
    // The pass's write is answered only once the old lease has run out (300 ms after its grant).
    own.set = (async (path: string, data: string, version: number) => {
      const stat = await realSet(path, data, version);
      await sleep(300);
      return stat;
    }) as typeof own.set;
    try {
      await holder.release();
    } finally {
      own.set = realSet;
    }
    const successor = await next;
    await sleep(300);
    expect(successor.signal.aborted).toBe(false);
    expect(theirsGranted).toBe(false);
    expect(await successor.release()).toBe(true);
    const other = await theirs;
    expect(other.fencingToken).toBeGreaterThan(successor.fencingToken as number);
    await other.release();
  });

  // Adversary: the break marked the node it had seen held without checking that the hold was still the one
  // seen; a pass in between made it name the holder that had passed on and end the one passed to.
  it('breaks only the hold its look saw: a hold passed on after the look is neither named nor ended', async () => {
    const { locks, own } = await instanceWithItsClient();
    const key = `break-at-pass:${run}`;
    const realSet = own.set.bind(own);
    const holder = await locks.acquire(key);
    let successor: LockHandle | undefined;
    const next = locks.acquire(key, { waitTimeout: 5_000 }).then((lock) => (successor = lock));
    await sleep(50);
    // The break's mark goes out only after the holder it saw passed the lock on.
    own.set = (async (path: string, data: string, version: number) => {
      if (data === 'broken') {
        await holder.release();
        await next;
      }
      return realSet(path, data, version);
    }) as typeof own.set;
    let ended;
    try {
      ended = await locks.breakLock(key, { reason: 'test' });
    } finally {
      own.set = realSet;
    }
    expect(ended).toEqual([]);
    await sleep(150);
    expect(successor?.signal.aborted).toBe(false);
    expect(successor?.isHeld).toBe(true);
    expect(await successor?.release()).toBe(true);
  });

  it('refuses a bad localHandover before any server is touched', () => {
    const nowhere = '127.0.0.1:1';
    expect(() => new ZooKeeperLockStrategy({ connect: nowhere, localHandover: { passes: 128 } })).toThrow(InvalidLockOptionsError);
    expect(() => new ZooKeeperLockStrategy({ connect: nowhere, localHandover: { passes: -1 } })).toThrow(InvalidLockOptionsError);
    expect(() => new ZooKeeperLockStrategy({ connect: nowhere, localHandover: { windowMs: -5 } })).toThrow(InvalidLockOptionsError);
    expect(() => new ZooKeeperLockStrategy({ connect: nowhere, localHandover: { pases: 3 } as never })).toThrow(InvalidLockOptionsError);
    // Adversary: null turned cohorting on with the default limits, and a null limit took the default.
    expect(() => new ZooKeeperLockStrategy({ connect: nowhere, localHandover: null as never })).toThrow(InvalidLockOptionsError);
    expect(() => new ZooKeeperLockStrategy({ connect: nowhere, localHandover: { passes: null } as never })).toThrow(InvalidLockOptionsError);
    expect(() => new ZooKeeperLockStrategy({ connect: nowhere, localHandover: { windowMs: null } as never })).toThrow(InvalidLockOptionsError);
    for (const localHandover of [undefined, false, { passes: 0 }, { windowMs: 0 }] as const) {
      const off = new ZooKeeperLockStrategy({ connect: nowhere, localHandover });
      expect(off.transfer).toBeUndefined();
      expect(off.capabilities.fifo).toBe(true);
    }
    const on = new ZooKeeperLockStrategy({ connect: nowhere, localHandover: { passes: 127 } });
    expect(on.handOverLimits).toEqual({ passes: 127, windowMs: 50 });
    expect(on.capabilities.fifo).toBe(false);
  });

  it('keeps a pass below the next zxid: the token is the czxid scaled, plus the pass', () => {
    expect(zkFencingToken(5, 0)).toBeLessThan(zkFencingToken(5, 127));
    expect(zkFencingToken(5, 127)).toBeLessThan(zkFencingToken(6, 0));
    expect(() => zkFencingToken(2 ** 46, 0)).toThrow(RangeError);
  });
});
