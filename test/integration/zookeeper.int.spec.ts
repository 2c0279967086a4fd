import { randomUUID } from 'node:crypto';
import util from 'node:util';
import { LockManager, LockService } from '@app/distributed-lock';
import { ZooKeeperLockStrategy, type ZooKeeperLeaseGrant } from '@app/distributed-lock/strategies/zookeeper';
import { zkErrorCode, type ZooKeeperLockClient } from '@app/distributed-lock/strategies/zookeeper/zookeeper-client.type';
import { zkFencingToken } from '@app/distributed-lock/strategies/zookeeper/zookeeper-hold-token';
import { createContender, ensureLockNode } from '@app/distributed-lock/strategies/zookeeper/zookeeper-lock.recipe';
import { ZooKeeperOrphans } from '@app/distributed-lock/strategies/zookeeper/zookeeper-orphans';
import { zkContenderPrefix, zkLockPath, zkSemaphorePath, zkSequence } from '@app/distributed-lock/strategies/zookeeper/zookeeper-paths';
import { ZooKeeperSession } from '@app/distributed-lock/strategies/zookeeper/zookeeper-session';
import { expectLocalHandOverWithoutLooks, expectWaiterBehindAQuitterToWaitForTheHolder, expectWaiterServedWhenHolderEntryVanishes, expectWritersInTokenOrder } from '../support/local-handover';
import { expectOwnReleaseNotReported, expectRemovedPermitReportedAtOnce, type PermitEntries } from '../support/permit-removal';

const BASE = '/dlock-int';
const run = randomUUID().slice(0, 8);
const connectionLoss = (): Error => new Error('-4 connection loss');

/**
 * The real client with a fault injected the way a leader election shows it to us: the server applies a
 * create but its answer is lost with the connection, and (optionally) the look-ups that follow fail too.
 */
function lossyClient(real: ZooKeeperLockClient, failedLookups: number): ZooKeeperLockClient & { creates: number } {
  let lookupsToFail = failedLookups;
  const lossy = {
    creates: 0,
    create: async (path: string, data: string, flags: number): Promise<string> => {
      const created = await real.create(path, data, flags);
      lossy.creates += 1;
      if (lossy.creates === 1) throw connectionLoss();
      return created;
    },
    get_children: async (path: string, watch: false): Promise<string[]> => {
      if (lookupsToFail > 0) {
        lookupsToFail -= 1;
        throw connectionLoss();
      }
      return real.get_children(path, watch);
    },
  };
  return lossy as unknown as ZooKeeperLockClient & { creates: number };
}

describe('ZooKeeper strategy: creates whose answer was lost', () => {
  let session: ZooKeeperSession;
  let client: ZooKeeperLockClient;
  let orphans: ZooKeeperOrphans;
  let manager: LockManager;

  beforeAll(async () => {
    session = new ZooKeeperSession({ connect: process.env.LOCK_TEST_ZOOKEEPER as string }, 'zookeeper-test', 10_000);
    client = await session.client();
    orphans = new ZooKeeperOrphans(session, 50);
    manager = new LockManager(new ZooKeeperLockStrategy({ connect: process.env.LOCK_TEST_ZOOKEEPER as string, basePath: BASE }));
  });

  afterAll(async () => {
    orphans.stop();
    await Promise.all([manager.close(), session.close()]);
  });

  const prepare = async (name: string): Promise<{ lockPath: string; prefix: string; ours: () => Promise<string[]> }> => {
    const lockPath = zkLockPath(BASE, `${name}:${run}`);
    await ensureLockNode(client, BASE, lockPath);
    const prefix = zkContenderPrefix(randomUUID(), 'exclusive');
    const ours = async (): Promise<string[]> => (await client.get_children(lockPath, false)).filter((child) => child.startsWith(prefix));
    return { lockPath, prefix, ours };
  };

  it('finds its node again, even when the first look-ups fail, and creates no second one', async () => {
    const { lockPath, prefix, ours } = await prepare('found-again');
    const lossy = lossyClient(client, 3);
    const path = await createContender(lossy, { base: BASE, lockPath, prefix }, 'owner', orphans, 'zookeeper');
    expect(lossy.creates).toBe(1);
    expect(await ours()).toEqual([path.slice(lockPath.length + 1)]);
    await client.delete_(path, -1);
  });

  it('hands a node of unknown fate to the sweeper, which deletes it so the lock is free for the others', async () => {
    const { lockPath, prefix, ours } = await prepare('unknown-fate');
    const key = `unknown-fate:${run}`;
    // Every look-up fails: the create's outcome stays unknown, and the recipe gives up rather than create again.
    const lossy = lossyClient(client, Number.POSITIVE_INFINITY);
    await expect(createContender(lossy, { base: BASE, lockPath, prefix }, 'owner', orphans, 'zookeeper')).rejects.toThrow(/connection loss/);
    expect(lossy.creates).toBe(1);
    expect(await ours()).toHaveLength(1); // the node is there, ahead of every contender
    const blocked = await new LockService(manager).tryAcquire(key);
    expect(blocked).toBeNull();

    orphans.adopt(lockPath, prefix);
    const freed = await new LockService(manager).acquire(key, { waitTimeout: 5_000 });
    expect(await ours()).toEqual([]);
    // The waiter (another session) can hear of the delete before the sweeper has its answer and forgets the
    // orphan: the two come on different connections, in no set order.
    await vi.waitFor(() => expect(orphans.size).toBe(0), { timeout: 2_000 });
    await freed.release();
  });
});

/**
 * A writer of this process right behind a writer of this process waits for it in the process (no watch
 * on its node) and is served as soon as that writer's delete is done: nobody can be ahead of it any
 * more. Seen here as the watch and the second children listing that the other path makes not being made.
 */
describe('ZooKeeper strategy: hand-over within a process', () => {
  const connect = (): string => process.env.LOCK_TEST_ZOOKEEPER as string;
  let here: LockManager;
  let elsewhere: LockManager;
  let listings = 0;

  beforeAll(async () => {
    const strategy = new ZooKeeperLockStrategy({ connect: connect(), basePath: BASE });
    here = new LockManager(strategy);
    elsewhere = new LockManager(new ZooKeeperLockStrategy({ connect: connect(), basePath: BASE }));
    // The strategy's own client, with its children listings (with or without stat) and watches counted.
    const client = await (strategy as unknown as { session: ZooKeeperSession }).session.client();
    const list = client.get_children.bind(client);
    client.get_children = (path: string, watch: false) => {
      listings += 1;
      return list(path, watch);
    };
    const listWithStat = client.get_children2.bind(client);
    client.get_children2 = (path: string, watch: false) => {
      listings += 1;
      return listWithStat(path, watch);
    };
    const watchNode = client.w_exists.bind(client);
    client.w_exists = (path: string, watcher: Parameters<ZooKeeperLockClient['w_exists']>[1]) => {
      listings += 1;
      return watchNode(path, watcher);
    };
  });

  afterAll(async () => {
    await Promise.all([here.close(), elsewhere.close()]);
  });

  it('serves the next writer of the same process without listing, and one behind another process with it', async () => {
    // On entering: the looks right before and right behind its create, and the watch on its own node.
    await expectLocalHandOverWithoutLooks(new LockService(here), new LockService(elsewhere), `local-handover:${run}`, { reset: () => (listings = 0), count: () => listings, onEntering: 3 });
  });

  it('keeps writers of two processes one at a time, in order of their fencing tokens', async () => {
    await expectWritersInTokenOrder(new LockService(here), new LockService(elsewhere), `local-handover-mix:${run}`);
  });

  it('keeps a writer waiting behind one of its process that gives up waiting for the holder', async () => {
    await expectWaiterBehindAQuitterToWaitForTheHolder(new LockService(here), `local-quitter:${run}`);
  });

  it('serves a writer waiting behind a holder of its process whose node was deleted behind their backs', async () => {
    await expectWaiterServedWhenHolderEntryVanishes(new LockService(here), `local-vanish:${run}`, async (holder) => {
      const client = await (here.strategy as unknown as { session: ZooKeeperSession }).session.client();
      await client.delete_((holder.grant as ZooKeeperLeaseGrant).znode, -1);
    });
  });
});

/**
 * An acquisition whose first look (sent with the create) lists its node alone takes its fencing token off
 * the lock node's stat (pzxid) instead of reading its own node: with nobody come or gone that is exactly
 * its node's creation zxid; otherwise a zxid above it and below the next holder's. Either way the tokens
 * grow strictly from holder to holder.
 */
describe('ZooKeeper strategy: fencing token read with the first look', () => {
  let manager: LockManager;
  let client: ZooKeeperLockClient;

  beforeAll(async () => {
    const strategy = new ZooKeeperLockStrategy({ connect: process.env.LOCK_TEST_ZOOKEEPER as string, basePath: BASE });
    manager = new LockManager(strategy);
    client = await (strategy as unknown as { session: ZooKeeperSession }).session.client();
  });

  afterAll(async () => {
    await manager.close();
  });

  const czxidOf = async (lock: { grant: unknown }): Promise<number> => Number((await client.exists((lock.grant as ZooKeeperLeaseGrant).znode, false)).czxid);
  // A hold's token is its node's czxid scaled, with room below the next zxid for passes within a process.
  const tokenOf = async (lock: { grant: unknown }): Promise<number> => zkFencingToken(await czxidOf(lock), 0);

  it("is the node's czxid (scaled), for a free lock (also after earlier holders came and went) and after a wait", async () => {
    const locks = new LockService(manager);
    const tokens: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      const free = await locks.acquire(`token-read:${run}`);
      expect(free.fencingToken).toBe(await tokenOf(free));
      tokens.push(free.fencingToken as number);
      const waiting = locks.acquire(`token-read:${run}`, { waitTimeout: 5_000 });
      await new Promise((resolve) => setTimeout(resolve, 20));
      await free.release();
      const next = await waiting;
      expect(next.fencingToken).toBe(await tokenOf(next));
      tokens.push(next.fencingToken as number);
      await next.release();
    }
    expect(tokens).toEqual([...tokens].sort((a, b) => a - b));
    expect(new Set(tokens).size).toBe(tokens.length);
  });

  it('holds a free lock without waiting for the read of its own node', async () => {
    const locks = new LockService(manager);
    const key = `token-no-read:${run}`;
    await (await locks.acquire(key)).release(); // the lock node exists and has had a child come and go
    const realWatch = client.w_exists.bind(client);
    let answerWatch: () => void = () => undefined;
    const watchAnswered = new Promise<void>((resolve) => (answerWatch = resolve));
    // The watch on our own node is set for real; only its answer is held back until the lock is ours.
    client.w_exists = (async (...args: Parameters<typeof realWatch>) => {
      const stat = await realWatch(...args);
      await watchAnswered;
      return stat;
    }) as typeof client.w_exists;
    try {
      const lock = await locks.acquire(key, { waitTimeout: 5_000 });
      answerWatch();
      expect(lock.fencingToken).toBe(await tokenOf(lock));
      await lock.release();
    } finally {
      client.w_exists = realWatch;
      answerWatch();
    }
  });

  // Seen in CI: the token was the visitor's delete, above our czxid, which a query names as our token
  // (query history check: "token 116, the holder's own 117"). The look before the create tells.
  it('is our czxid, below the next holder\'s, when someone comes and goes between our create and our first look', async () => {
    const locks = new LockService(manager);
    const key = `token-came-went:${run}`;
    const lockPath = zkLockPath(BASE, key);
    await (await locks.acquire(key)).release();
    const realList = client.get_children2.bind(client);
    // Between our create and our first look, a contender creates its node and deletes it again.
    client.get_children2 = (async (path: string, watch: false) => {
      if (path === lockPath) {
        const visitor = await client.create(`${lockPath}/${zkContenderPrefix(randomUUID(), 'exclusive')}`, 'visitor', 3);
        await client.delete_(visitor, -1);
      }
      return realList(path, watch);
    }) as typeof client.get_children2;
    let first;
    try {
      first = await locks.acquire(key, { waitTimeout: 5_000 });
    } finally {
      client.get_children2 = realList;
    }
    expect(first.fencingToken).toBe(await tokenOf(first));
    expect((await locks.query(key)).held[0].fencingToken).toBe(first.fencingToken);
    await first.release();
    const next = await locks.acquire(key, { waitTimeout: 5_000 });
    expect(next.fencingToken).toBeGreaterThan(first.fencingToken as number);
    await next.release();
  });
});

describe('ZooKeeper strategy: its client on Node\'s sockets', () => {
  let session: ZooKeeperSession;
  let manager: LockManager;

  beforeAll(() => {
    session = new ZooKeeperSession({ connect: process.env.LOCK_TEST_ZOOKEEPER as string }, 'zookeeper-client-test', 10_000);
    manager = new LockManager(new ZooKeeperLockStrategy({ connect: process.env.LOCK_TEST_ZOOKEEPER as string, basePath: BASE }));
  });

  afterAll(async () => {
    await Promise.all([manager.close(), session.close()]);
  });

  it('takes and frees a lock without building a log line per call', async () => {
    const locks = new LockService(manager);
    await (await locks.acquire(`native:${run}`)).release(); // session open, lock node made
    const inspect = vi.spyOn(util, 'inspect');
    try {
      const lock = await locks.acquire(`native:${run}`);
      expect(lock.fencingToken).toBeGreaterThan(0);
      expect(await lock.release()).toBe(true);
      expect(inspect).not.toHaveBeenCalled();
    } finally {
      inspect.mockRestore();
    }
  });

  it('watches the node of a lock that was free only once it is held past a short delay', async () => {
    const { here, locks, watches } = await withCountedWatches(`late-watch:${run}`, () => undefined);
    try {
      await (await locks.acquire(`late-watch:${run}`)).release();
      expect(watches()).toBe(0); // create, the listing sent with it, delete: nothing else
      const held = await locks.acquire(`late-watch:${run}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(watches()).toBe(1);
      expect(await held.release()).toBe(true);
    } finally {
      await here.close();
    }
  });

  it('reports a node deleted behind the holder\'s back before its watch was set', async () => {
    const locks = new LockService(manager);
    const lock = await locks.acquire(`late-watch-deleted:${run}`);
    const client = await session.client();
    await client.delete_(await nodeOf(client, `late-watch-deleted:${run}`), -1); // within the 50 ms before the watch
    const reason = await new Promise<unknown>((resolve, reject) => {
      if (lock.signal.aborted) return resolve(lock.signal.reason);
      const timer = setTimeout(() => reject(new Error('not told within 5 s')), 5_000);
      lock.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve(lock.signal.reason);
      });
    });
    expect(reason).toMatchObject({ name: 'LockLostError' });
    expect(lock.isHeld).toBe(false);
  });

  it('sets that watch again when the connection dropped under it, and a later deletion is still reported', async () => {
    // The first try to set the watch is lost with the connection.
    const { here, locks, watches } = await withCountedWatches(`watch-retry:${run}`, (tries) => (tries === 1 ? connectionLoss() : undefined));
    try {
      const lock = await locks.acquire(`watch-retry:${run}`);
      await new Promise((resolve) => setTimeout(resolve, 600)); // 50 ms, a lost try, 250 ms, the watch
      expect(watches()).toBe(2);
      expect(lock.isHeld).toBe(true);
      const other = await session.client();
      await other.delete_(await nodeOf(other, `watch-retry:${run}`), -1);
      await new Promise<void>((resolve, reject) => {
        if (lock.signal.aborted) return resolve(); // the watch's event may come in before the delete's answer
        const timer = setTimeout(() => reject(new Error('not told within 5 s')), 5_000);
        lock.signal.addEventListener('abort', () => {
          clearTimeout(timer);
          resolve();
        });
      });
      expect(lock.signal.reason).toMatchObject({ name: 'LockLostError' });
    } finally {
      await here.close();
    }
  });

  it('answers with stats whose zxids are numbers, and fails with ZooKeeper\'s code', async () => {
    const client = await session.client();
    await ensureLockNode(client, BASE, `${BASE}/native-${run}`);
    const created = await client.create(`${BASE}/native-${run}/n-`, 'owner', 3);
    expect(created).toMatch(new RegExp(`^${BASE}/native-${run}/n-\\d{10}$`));
    const [children, stat] = await client.get_children2(`${BASE}/native-${run}`, false);
    expect(children).toEqual([created.split('/').pop()]);
    const own = await client.exists(created, false);
    expect(own.czxid).toBeGreaterThan(0);
    expect(stat.pzxid).toBe(own.czxid); // our create is the last change to the lock node's children
    expect(await client.get_children(`${BASE}/native-${run}`, false)).toEqual(children);
    const [, data] = await client.get(created, false);
    expect(data.toString()).toBe('owner');
    await client.delete_(created, -1);
    const missing = await client.exists(created, false).catch((error: unknown) => error);
    expect(zkErrorCode(missing)).toBe(-101);
    const duplicate = await client.create(`${BASE}/native-${run}`, '', 0).catch((error: unknown) => error);
    expect(zkErrorCode(duplicate)).toBe(-110);
  });

  it('leaves no watch behind on a node that was already gone: its path made again fires nothing', async () => {
    const client = await session.client();
    const path = `${BASE}/gone-${run}`;
    await client.create(path, '', 0);
    await client.delete_(path, -1);
    const watcher = vi.fn();
    expect(zkErrorCode(await client.w_exists(path, watcher).catch((error: unknown) => error))).toBe(-101);
    await client.create(path, '', 0);
    const stat = await client.w_exists(path, watcher); // a watch that is set does fire
    expect(stat.czxid).toBeGreaterThan(0);
    await client.delete_(path, -1);
    await vi.waitFor(() => expect(watcher).toHaveBeenCalledTimes(1), { timeout: 5_000 });
    expect(watcher).toHaveBeenCalledWith(2);
  });
});

/** The path of the only contender node of `key`'s lock. */
async function nodeOf(client: ZooKeeperLockClient, key: string): Promise<string> {
  const lockPath = zkLockPath(BASE, key);
  const [name] = await client.get_children(lockPath, false);
  return `${lockPath}/${name}`;
}

/**
 * A ZooKeeper strategy whose watches on nodes are counted, each try failing with the error `failure`
 * gives for it (undefined: it goes through). `key` has been taken and freed once (session open, lock
 * node made) before counting starts.
 */
async function withCountedWatches(key: string, failure: (tries: number) => Error | undefined): Promise<{ here: LockManager; locks: LockService; watches: () => number }> {
  const strategy = new ZooKeeperLockStrategy({ connect: process.env.LOCK_TEST_ZOOKEEPER as string, basePath: BASE, name: `zookeeper-${key}` });
  const here = new LockManager(strategy);
  const locks = new LockService(here);
  await (await locks.acquire(key)).release();
  const client = await (strategy as unknown as { session: ZooKeeperSession }).session.client();
  let tries = 0;
  const watchNode = client.w_exists.bind(client);
  client.w_exists = (path: string, watcher: Parameters<ZooKeeperLockClient['w_exists']>[1]) => {
    tries += 1;
    const error = failure(tries);
    return error ? Promise.reject(error) : watchNode(path, watcher);
  };
  return { here, locks, watches: () => tries };
}

describe('ZooKeeper strategy: a permit whose node is deleted behind its holder', () => {
  let session: ZooKeeperSession;
  let strategy: ZooKeeperLockStrategy;
  let manager: LockManager;
  let otherManager: LockManager;

  beforeAll(() => {
    session = new ZooKeeperSession({ connect: process.env.LOCK_TEST_ZOOKEEPER as string }, 'zookeeper-permit-test', 10_000);
    strategy = new ZooKeeperLockStrategy({ connect: process.env.LOCK_TEST_ZOOKEEPER as string, basePath: BASE });
    manager = new LockManager(strategy);
    otherManager = new LockManager(new ZooKeeperLockStrategy({ connect: process.env.LOCK_TEST_ZOOKEEPER as string, basePath: BASE }));
  });

  afterAll(async () => {
    await Promise.all([manager.close(), otherManager.close(), session.close()]);
  });

  const entries = (): PermitEntries => ({
    list: async (key) => {
      const semaphorePath = zkSemaphorePath(BASE, key);
      const names = await (await session.client()).get_children(semaphorePath, false);
      return names.sort((a, b) => zkSequence(a) - zkSequence(b)).map((name) => `${semaphorePath}/${name}`);
    },
    remove: async (entry) => {
      await (await session.client()).delete_(entry, -1);
    },
  });

  it('tells the holder while the section runs, not at its next extension; withPermit rejects, and the waiter behind gets the place', async () => {
    await expectRemovedPermitReportedAtOnce(new LockService(manager), new LockService(otherManager), `permit-deleted:${run}`, entries());
  }, 20_000);

  it('tells nobody when the holder gives the permit back itself', async () => {
    await expectOwnReleaseNotReported(strategy.semaphore, `permit-own-release:${run}`);
  });

  it('gives no grant for a permit given back while its grant was being checked (close() meanwhile)', async () => {
    const closing = new ZooKeeperLockStrategy({ connect: process.env.LOCK_TEST_ZOOKEEPER as string, basePath: BASE });
    try {
      const key = `permit-closed-during-grant:${run}`;
      await closing.ping(); // session open
      const client = await (closing as unknown as { session: ZooKeeperSession }).session.client();
      const realWatch = client.w_exists.bind(client);
      // The grant's look at its own node is answered, and the strategy closes as the answer comes in.
      client.w_exists = async (path: string, watcher: Parameters<ZooKeeperLockClient['w_exists']>[1]) => {
        const stat = await realWatch(path, watcher);
        client.w_exists = realWatch;
        await closing.semaphore.close();
        return stat;
      };
      const grant = await closing.semaphore.tryAcquire({ key, owner: `closing-${run}`, ttlMs: 30_000, mode: 'exclusive', permits: 1, weight: 1 });
      expect(grant).toBeNull();
      expect(closing.semaphore.holdsPermits()).toBe(false);
    } finally {
      await closing.close();
    }
  });
});

/**
 * `breakLock` tells the holder "broken" however far its watch on its node has got: not set yet (a lock
 * that was free is watched after 50 ms), set by the hold, or set by the wait that preceded the grant.
 */
describe('ZooKeeper strategy: a broken holder is told why', () => {
  const managers: LockManager[] = [];
  const service = (): LockService => {
    const manager = new LockManager(new ZooKeeperLockStrategy({ connect: process.env.LOCK_TEST_ZOOKEEPER as string, basePath: BASE, sessionTimeout: 4_000 }));
    managers.push(manager);
    return new LockService(manager);
  };
  const lostReason = (signal: AbortSignal): Promise<unknown> =>
    new Promise((resolve) => signal.addEventListener('abort', () => resolve((signal.reason as { reason?: unknown }).reason), { once: true }));

  afterAll(async () => {
    await Promise.all(managers.map((manager) => manager.close()));
  });

  it.each([
    ['right after the grant, before its watch is set', 0],
    ['once its watch is set', 200],
  ])('of a lock that was free, broken %s', async (_when, afterMs) => {
    const [holderSide, operator] = [service(), service()];
    const key = `broken-free:${run}:${afterMs}`;
    // The operator's session made first, so that its break can come within the holder's first 50 ms.
    expect((await operator.query(key)).held).toEqual([]);
    const lock = await holderSide.acquire(key, { ttl: 10_000 });
    const told = lostReason(lock.signal);
    await new Promise((resolve) => setTimeout(resolve, afterMs));
    expect((await operator.breakLock(key, { reason: 'test' })).map((held) => held.owner.id)).toEqual([lock.owner]);
    expect(await told).toBe('broken');
    expect((await operator.query(key)).held).toEqual([]);
  });

  it('of a lock granted after a wait (the wait\'s watch on its node)', async () => {
    const [first, second, operator] = [service(), service(), service()];
    const key = `broken-waited:${run}`;
    const holder = await first.acquire(key, { ttl: 10_000 });
    const waiting = second.acquire(key, { ttl: 10_000, waitTimeout: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    await holder.release();
    const lock = await waiting;
    const told = lostReason(lock.signal);
    expect((await operator.breakLock(key, { reason: 'test' })).map((held) => held.owner.id)).toEqual([lock.owner]);
    expect(await told).toBe('broken');
  });
});
