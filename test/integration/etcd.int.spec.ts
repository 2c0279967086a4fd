import { randomUUID } from 'node:crypto';
import { LockAcquireTimeoutError, LockManager, LockService } from '@app/distributed-lock';
import { etcdLockPrefix, etcdSemaphorePrefix } from '@app/distributed-lock/strategies/etcd/etcd-keys';
import { EtcdLockStrategy, type EtcdLeaseGrant } from '@app/distributed-lock/strategies/etcd';
import { Etcd3 } from 'etcd3';
import { expectLocalHandOverWithoutLooks, expectWaiterBehindAQuitterToWaitForTheHolder, expectWaiterServedWhenHolderEntryVanishes, expectWritersInTokenOrder } from '../support/local-handover';
import { beforeKeepAlives, interceptTransactions, onTransactionAnswers } from '../support/etcd-answers';
import { expectOwnReleaseNotReported, expectRemovedPermitReportedAtOnce, type PermitEntries } from '../support/permit-removal';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const run = randomUUID().slice(0, 8);

/**
 * A released lock's lease is kept for the next lock of the process, so the same contender key name comes
 * back, now at the end of the queue. A waiter that watched the old key must not take the new one for the
 * key ahead of it (that would be a deadlock: each waiting for the other).
 */
describe('etcd strategy: reused leases', () => {
  let client: Etcd3;
  let holderSide: LockManager;
  let waiterSide: LockManager;

  beforeAll(() => {
    client = new Etcd3({ hosts: (process.env.LOCK_TEST_ETCD as string).split(',') });
    holderSide = new LockManager(new EtcdLockStrategy({ connection: { hosts: (process.env.LOCK_TEST_ETCD as string).split(',') } }));
    waiterSide = new LockManager(new EtcdLockStrategy({ connection: { hosts: (process.env.LOCK_TEST_ETCD as string).split(',') } }));
  });

  afterAll(async () => {
    await Promise.all([holderSide.close(), waiterSide.close()]);
    client.close();
  });

  it('serves a waiter whose blocker comes back under the same key name', async () => {
    const holder = new LockService(holderSide);
    const waiter = new LockService(waiterSide);
    const order: string[] = [];
    // Each round: the holder releases at a different moment of the waiter's start (read, watch, check).
    for (let round = 0; round < 12; round += 1) {
      const key = `reuse:${run}:${round}`;
      const first = await holder.acquire(key);
      const waiting = waiter.acquire(key, { waitTimeout: 5_000 }).then(async (lock) => {
        order.push(`waiter-${round}`);
        await lock.release();
      });
      await sleep(round % 4);
      await first.release();
      // Re-enters at once with the lease it just released: same key name, behind the waiter.
      const again = await holder.acquire(key, { waitTimeout: 5_000 });
      order.push(`holder-${round}`);
      await again.release();
      await waiting;
    }
    expect(order.filter((entry) => entry.startsWith('waiter'))).toHaveLength(12);
    expect(order.filter((entry) => entry.startsWith('holder'))).toHaveLength(12);
  });

  it('grants no new lease for a lock taken after another was released', async () => {
    const service = new LockService(holderSide);
    const first = await service.acquire(`warm:${run}`);
    const { leaseId } = first.grant as EtcdLeaseGrant;
    await first.release();
    // No lease granted per lock: the released one is reused. (Not a count of the server's leases: the other
    // test files running beside this one grant leases of their own on the same etcd.)
    for (let i = 0; i < 20; i += 1) {
      const lock = await service.acquire(`warm:${run}`);
      expect((lock.grant as EtcdLeaseGrant).leaseId).toBe(leaseId);
      await lock.release();
    }
  });

  it('takes a fresh lease when the kept one was revoked behind its back', async () => {
    const service = new LockService(holderSide);
    const first = await service.acquire(`revoked:${run}`);
    const { leaseId } = first.grant as EtcdLeaseGrant;
    await first.release();
    // An operator (or etcd itself) ends the idle lease the strategy keeps for the next lock.
    await client.leaseClient.leaseRevoke({ ID: leaseId });
    const second = await service.acquire(`revoked:${run}`, { waitTimeout: 5_000 });
    expect((second.grant as EtcdLeaseGrant).leaseId).not.toBe(leaseId);
    await second.release();
  });
});

/**
 * A writer of this process right behind a writer of this process waits for it in the process (no watch)
 * and is served at once when it releases: nobody can be ahead of it any more. Seen here as the watch and
 * the read that the other path makes (the transaction that checks our own key and who is ahead) not
 * being made.
 */
describe('etcd strategy: hand-over within a process', () => {
  const hosts = (): string[] => (process.env.LOCK_TEST_ETCD as string).split(',');
  let raw: Etcd3;
  let otherClient: Etcd3;
  let serverLooks = 0;
  let here: LockManager;
  let elsewhere: LockManager;

  beforeAll(() => {
    raw = new Etcd3({ hosts: hosts() });
    otherClient = new Etcd3({ hosts: hosts() });
    // Counts the looks at the server a waiter makes: watches, and the conditional reads on an existing
    // key's create revision (enter() compares with 0).
    const counting = new Proxy(raw, {
      get(target, property) {
        if (property === 'watch') {
          return () => {
            serverLooks += 1;
            return target.watch();
          };
        }
        if (property === 'if') {
          return (key: string, column: 'Create', cmp: '==', value: string | number) => {
            const txn = target.if(key, column, cmp, value);
            if (value === 0) return txn;
            // A conditional read (our own key still there, who is ahead) is a look; the release's
            // conditional delete of our own key is not.
            const then = txn.then.bind(txn);
            txn.then = (...ops: Parameters<typeof txn.then>) => {
              if (!ops.every((op) => op.constructor.name === 'DeleteBuilder')) serverLooks += 1;
              return then(...ops);
            };
            return txn;
          };
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    here = new LockManager(new EtcdLockStrategy({ client: counting }));
    elsewhere = new LockManager(new EtcdLockStrategy({ client: otherClient }));
  });

  afterAll(async () => {
    await Promise.all([here.close(), elsewhere.close()]);
    raw.close();
    otherClient.close();
  });

  it('serves the next writer of the same process without the read, and one behind another process with it', async () => {
    await expectLocalHandOverWithoutLooks(new LockService(here), new LockService(elsewhere), `local-handover:${run}`, { reset: () => (serverLooks = 0), count: () => serverLooks, onEntering: 0 });
  });

  it('keeps writers of two processes one at a time, in order of their fencing tokens', async () => {
    await expectWritersInTokenOrder(new LockService(here), new LockService(elsewhere), `local-handover-mix:${run}`);
  });

  it('keeps a writer waiting behind one of its process that gives up waiting for the holder', async () => {
    await expectWaiterBehindAQuitterToWaitForTheHolder(new LockService(here), `local-quitter:${run}`);
  });

  it('serves a writer waiting behind a holder of its process whose key was deleted behind their backs', async () => {
    await expectWaiterServedWhenHolderEntryVanishes(new LockService(here), `local-vanish:${run}`, async (holder) => {
      await raw.delete().key((holder.grant as EtcdLeaseGrant).etcdKey).exec();
    });
  });
});

/** extend(ttl) beyond the lease the lock was taken with: a keep-alive only renews the lease's own TTL. */
describe('etcd strategy: extending past the lease a lock was taken with', () => {
  const hosts = (): string[] => (process.env.LOCK_TEST_ETCD as string).split(',');
  let holderSide: LockManager;
  let otherSide: LockManager;

  beforeAll(() => {
    holderSide = new LockManager(new EtcdLockStrategy({ connection: { hosts: hosts() } }));
    otherSide = new LockManager(new EtcdLockStrategy({ connection: { hosts: hosts() } }));
  });

  afterAll(async () => {
    await Promise.all([holderSide.close(), otherSide.close()]);
  });

  it('keeps the lock for the longer ttl, with the same fencing token', async () => {
    const key = `extend-longer:${run}`;
    const lock = await new LockService(holderSide).acquire(key, { ttl: 2_000, autoExtend: false });
    const token = lock.fencingToken;
    await lock.extend(8_000);
    // Past the 2 s lease it was taken with (and its etcd lease's whole seconds).
    await sleep(3_500);
    expect(lock.signal.aborted).toBe(false);
    expect(await new LockService(otherSide).tryAcquire(key)).toBeNull();
    expect(lock.fencingToken).toBe(token);
    expect(await lock.release()).toBe(true);
    const next = await new LockService(otherSide).tryAcquire(key);
    expect(next?.fencingToken).toBeGreaterThan(token as number);
    await next?.release();
  }, 15_000);
});

/**
 * An extension past the lease moves the key to a lease of the longer TTL. When that move's answer is lost
 * (a connection reset, a leader change after the write was applied), the caller does not know which lease
 * carries the key. It must keep the lock or permit all the same: the extension fails, and later extensions
 * renew the key wherever it is.
 */
describe('etcd strategy: an extension past the lease whose answer is lost', () => {
  const hosts = (): string[] => (process.env.LOCK_TEST_ETCD as string).split(',');
  let client: Etcd3;
  let manager: LockManager;
  let otherManager: LockManager;
  /**
   * What happens to the next transaction: its answer lost (etcd applies it, the strategy gets an error) or
   * late by `lateMs`, or its request held back `heldMs` on the way to etcd.
   */
  let nextAnswer: 'lost' | { lateMs: number } | { heldMs: number; sent(): void } | undefined;
  /** How long the next keep-alive is held up before it is sent, and called once it is sent. */
  let nextKeepAlive: { lateMs: number; sent(): void } | undefined;
  /** Called when the late answer's transaction has been applied, and when its answer is given. */
  let lateAnswer: { applied(): void; given(): void } | undefined;

  beforeAll(() => {
    client = new Etcd3({ hosts: hosts() });
    interceptTransactions(client, async (send) => {
      const fate = nextAnswer;
      nextAnswer = undefined;
      if (typeof fate === 'object' && 'heldMs' in fate) {
        await sleep(fate.heldMs);
        const answer = send();
        fate.sent();
        return answer;
      }
      const answer = await send();
      if (typeof fate === 'object') {
        const told = lateAnswer;
        told?.applied();
        await sleep(fate.lateMs);
        setImmediate(() => told?.given()); // once the strategy has had the answer
      }
      if (fate === 'lost') throw new Error('14 UNAVAILABLE: the connection was reset after the write was sent');
      return answer;
    });
    beforeKeepAlives(client, async () => {
      const late = nextKeepAlive;
      nextKeepAlive = undefined;
      if (!late) return;
      await sleep(late.lateMs);
      late.sent();
    });
    manager = new LockManager(new EtcdLockStrategy({ client }));
    otherManager = new LockManager(new EtcdLockStrategy({ connection: { hosts: hosts() } }));
  });

  afterAll(async () => {
    await Promise.all([manager.close(), otherManager.close()]);
    client.close();
  });

  /** Extends with the lease it was taken with, every 300 ms for 4 s: past the longer lease of the lost move. */
  async function keepExtending(handle: { extend(ttl?: number): Promise<void> }): Promise<void> {
    for (const until = Date.now() + 4_000; Date.now() < until; ) {
      await handle.extend();
      await sleep(300);
    }
  }

  type Held = { extend(ttl?: number): Promise<void>; release(): Promise<boolean>; readonly signal: AbortSignal };

  /** Runs `scenario` on a lock, then on a permit (each taken with `ttl`, not auto-extended): each must still be held, and give back. */
  async function onLockAndPermit(name: string, ttl: number, scenario: (handle: Held) => Promise<void>): Promise<void> {
    const service = new LockService(manager);
    for (const take of [() => service.acquire(`${name}:${run}`, { ttl, autoExtend: false }), () => service.acquirePermit(`${name}-permit:${run}`, { permits: 1, ttl, autoExtend: false })]) {
      const handle = await take();
      await scenario(handle);
      expect(handle.signal.aborted).toBe(false);
      expect(await handle.release()).toBe(true);
    }
  }

  it('keeps the lock, with the same fencing token', async () => {
    const key = `extend-lost-answer:${run}`;
    const lock = await new LockService(manager).acquire(key, { ttl: 1_000, autoExtend: false });
    const token = lock.fencingToken;
    nextAnswer = 'lost';
    await expect(lock.extend(3_000)).rejects.toThrow();
    await keepExtending(lock);
    expect(lock.signal.aborted).toBe(false);
    expect(await new LockService(otherManager).tryAcquire(key)).toBeNull();
    expect(lock.fencingToken).toBe(token);
    expect(await lock.release()).toBe(true);
    // The release deleted the key, whichever lease it sat on: the next one takes the lock at once.
    const next = await new LockService(otherManager).tryAcquire(key);
    expect(next).not.toBeNull();
    await next?.release();
  }, 15_000);

  it('leaves no key behind at close() when the lease that may carry it is one nobody renews', async () => {
    const key = `extend-lost-answer-close:${run}`;
    const strategy = new EtcdLockStrategy({ client });
    const closing = new LockManager(strategy);
    const lock = await new LockService(closing).acquire(key, { ttl: 1_000, autoExtend: false });
    nextAnswer = 'lost';
    await expect(lock.extend(5_000)).rejects.toThrow();
    // The strategy's own close (the manager's would release the lock first): it ends every lease it made.
    await strategy.close();
    const next = await new LockService(otherManager).tryAcquire(key);
    expect(next).not.toBeNull();
    await next?.release();
    await closing.close();
  });

  /**
   * Moves the key to a longer lease whose answer is `lateMs` late; resolves once etcd has applied the move,
   * with the extension and the moment its strategy has had the answer.
   */
  async function moveAnsweredLate(handle: { extend(ttl?: number): Promise<void> }, ttl: number, lateMs: number): Promise<{ moving: Promise<unknown>; answered: Promise<void> }> {
    let answered: Promise<void> = Promise.resolve();
    const applied = new Promise<void>((resolveApplied) => {
      answered = new Promise<void>((resolveGiven) => (lateAnswer = { applied: resolveApplied, given: resolveGiven }));
    });
    nextAnswer = { lateMs };
    const moving = handle.extend(ttl).catch((error: unknown) => error);
    await applied;
    return { moving, answered };
  }

  it('keeps the lock and the permit when another extension comes while a move to a longer lease is answered late', async () => {
    await onLockAndPermit('extend-racing', 3_000, async (handle) => {
      // The move is applied, and its answer is on its way for 300 ms: the other extension comes meanwhile.
      const { moving } = await moveAnsweredLate(handle, 6_000, 300);
      await handle.extend();
      expect(await moving).toBeUndefined();
      await sleep(200); // the lease the key left is revoked in the background
      await handle.extend();
    });
  }, 15_000);

  it('keeps the lock and the permit while a move to a longer lease goes unanswered for longer than the lease', async () => {
    await onLockAndPermit('extend-hung', 2_000, async (handle) => {
      // The later extensions wait for the move a third of the lease left at most, then go on without it.
      const { answered } = await moveAnsweredLate(handle, 6_000, 4_000);
      for (const until = Date.now() + 5_000; Date.now() < until; ) {
        await handle.extend();
        await sleep(300);
      }
      await answered;
      await handle.extend();
    });
    const next = await new LockService(otherManager).tryAcquire(`extend-hung:${run}`);
    expect(next).not.toBeNull();
    await next?.release();
  }, 30_000);

  it('keeps the lock and the permit when a later move overtakes a move that goes unanswered', async () => {
    await onLockAndPermit('extend-overtaken-move', 2_000, async (handle) => {
      // The first move is applied and answered 3 s late; the second waits its turn (a third of the lease
      // left), then moves the key to a longer lease still and revokes the one it left.
      const { answered } = await moveAnsweredLate(handle, 4_000, 3_000);
      await handle.extend(8_000);
      await answered;
      await sleep(200); // anything the late answer set off in the background
      await handle.extend(8_000);
    });
  }, 30_000);

  it('keeps the lock and the permit when a keep-alive reaches etcd after a later move left its lease', async () => {
    await onLockAndPermit('extend-overtaken-keepalive', 3_000, async (handle) => {
      // The keep-alive is held up 2 s; the move waits its turn (a third of the lease left), moves the key to
      // an 8 s lease and revokes the one it left; then the keep-alive reaches etcd, for a revoked lease.
      const sent = new Promise<void>((resolve) => (nextKeepAlive = { lateMs: 2_000, sent: resolve }));
      const keepingAlive = handle.extend().catch((error: unknown) => error);
      await handle.extend(8_000);
      await sent;
      await keepingAlive;
      await sleep(300); // the keep-alive's answer, and anything it set off in the background
      await handle.extend(8_000);
    });
  }, 30_000);

  it('never vouches for the lock or the permit past the end of a lease that a move on its way may put the key on', async () => {
    const service = new LockService(manager);
    const keysUnder = async (prefix: string): Promise<number> => (await client.getAll().prefix(prefix).keys()).length;
    const check = async (handle: { extend(ttl?: number): Promise<void>; readonly expiresAt: number }, prefix: string): Promise<void> => {
      // The move to a 7 s lease is held back 2.5 s on its way to etcd. The next extension waits its turn (a
      // third of the 6 s lease left), renews the lease the key is on, and says until when the key is held.
      // Then the move lands: the key is on the 7 s lease, and nobody extends any more (as if the holder
      // were cut off from etcd from then on).
      const landed = new Promise<void>((sent) => (nextAnswer = { heldMs: 2_500, sent }));
      const moving = handle.extend(7_000).catch((error: unknown) => error);
      await handle.extend();
      const vouchedUntil = handle.expiresAt;
      await landed;
      await moving;
      while ((await keysUnder(prefix)) > 0) await sleep(20);
      expect(vouchedUntil).toBeLessThanOrEqual(Date.now());
    };
    const lockKey = `extend-pending-move:${run}`;
    await check(await service.acquire(lockKey, { ttl: 6_000, autoExtend: false }), etcdLockPrefix('dlock/', lockKey));
    const permitKey = `extend-pending-move-permit:${run}`;
    await check(await service.acquirePermit(permitKey, { permits: 1, ttl: 6_000, autoExtend: false }), etcdSemaphorePrefix('dlock/', permitKey));
  }, 30_000);

  it('keeps the permit, with the same fencing token', async () => {
    const key = `extend-lost-answer-permit:${run}`;
    const permit = await new LockService(manager).acquirePermit(key, { permits: 1, ttl: 1_000, autoExtend: false });
    const token = permit.fencingToken;
    nextAnswer = 'lost';
    await expect(permit.extend(3_000)).rejects.toThrow();
    await keepExtending(permit);
    expect(permit.signal.aborted).toBe(false);
    expect(await new LockService(otherManager).tryAcquirePermit(key, { permits: 1 })).toBeNull();
    expect(permit.fencingToken).toBe(token);
    expect(await permit.release()).toBe(true);
    const next = await new LockService(otherManager).tryAcquirePermit(key, { permits: 1 });
    expect(next).not.toBeNull();
    await next?.release();
  }, 15_000);
});

/** A permit whose key an operator (or a bug) deletes while its holder is in the section. */
describe('etcd strategy: a permit whose key is deleted behind its holder', () => {
  const hosts = (): string[] => (process.env.LOCK_TEST_ETCD as string).split(',');
  let raw: Etcd3;
  let strategy: EtcdLockStrategy;
  let manager: LockManager;
  let otherManager: LockManager;

  beforeAll(() => {
    raw = new Etcd3({ hosts: hosts() });
    strategy = new EtcdLockStrategy({ connection: { hosts: hosts() } });
    manager = new LockManager(strategy);
    otherManager = new LockManager(new EtcdLockStrategy({ connection: { hosts: hosts() } }));
  });

  afterAll(async () => {
    await Promise.all([manager.close(), otherManager.close()]);
    raw.close();
  });

  const entries = (): PermitEntries => ({
    list: async (key) => raw.getAll().prefix(etcdSemaphorePrefix('dlock/', key)).sort('Create', 'Ascend').keys(),
    remove: async (entry) => {
      await raw.delete().key(entry).exec();
    },
  });

  it('tells the holder while the section runs, not at its next extension; withPermit rejects, and the waiter behind gets the place', async () => {
    await expectRemovedPermitReportedAtOnce(new LockService(manager), new LockService(otherManager), `permit-deleted:${run}`, entries());
  }, 20_000);

  it('tells nobody when the holder gives the permit back itself', async () => {
    await expectOwnReleaseNotReported(strategy.semaphore, `permit-own-release:${run}`);
  });

  it('sets no watch for a waiter whose place comes in while its strategy closes', async () => {
    const key = `permit-closed-during-grant:${run}`;
    const client = new Etcd3({ hosts: hosts() });
    const closing = new EtcdLockStrategy({ client });
    const request = (owner: string) => ({ key, owner, ttlMs: 30_000, mode: 'exclusive', permits: 1, weight: 1 }) as const;
    // Every transaction of the waiter's strategy is counted as its answer comes in; once armed, the next
    // one closes the strategy as it is answered.
    let answered = 0;
    let closeOnNextAnswer = false;
    onTransactionAnswers(client, () => {
      answered += 1;
      if (closeOnNextAnswer) {
        closeOnNextAnswer = false;
        void closing.semaphore.close();
      }
    });
    try {
      const held = await strategy.semaphore.tryAcquire(request(`holder-${run}`));
      const waiting = closing.semaphore.acquire(request(`waiter-${run}`), { signal: new AbortController().signal, timeoutMs: 10_000 });
      // The waiter waits: its key is in (one transaction) and its first look after setting its watch is
      // answered (a second). Before that, the release below could reach etcd ahead of that look.
      for (let tries = 0; answered < 2; tries += 1) {
        if (tries > 500) throw new Error('the waiter never joined the queue');
        await sleep(10);
      }
      expect((await entries().list(key)).length).toBe(2);
      // The waiter's next look (the holder's release wakes it) finds it holds, and its strategy closes as
      // that answer comes in: close() gives every place back, so the grant that follows must arm no watch.
      closeOnNextAnswer = true;
      await strategy.semaphore.release(held as NonNullable<typeof held>);
      await waiting;
      await sleep(200); // past the 50 ms after which a grant's watch is armed
      const watches = (closing.semaphore as unknown as { ownKeys: { entries: Map<string, unknown> } }).ownKeys.entries;
      expect(watches.size).toBe(0);
    } finally {
      await closing.close();
      client.close();
    }
  });
});

/**
 * Semaphores keep their permits under `<namespace>sem/`. A lock named "sem" had that very prefix for its
 * contenders, so it saw every semaphore's permits as contenders ahead of it.
 */
describe('etcd strategy: a lock named like the semaphores\' folder', () => {
  const namespace = `dlock-sem-${run}/`;
  const hosts = (): string[] => (process.env.LOCK_TEST_ETCD as string).split(',');
  let permitSide: LockManager;
  let lockSide: LockManager;

  beforeAll(() => {
    permitSide = new LockManager(new EtcdLockStrategy({ connection: { hosts: hosts() }, namespace }));
    lockSide = new LockManager(new EtcdLockStrategy({ connection: { hosts: hosts() }, namespace }));
  });

  afterAll(async () => {
    await Promise.all([permitSide.close(), lockSide.close()]);
  });

  it('is free while a semaphore\'s permits are held, and takes none of its places', async () => {
    const permit = await new LockService(permitSide).acquirePermit('payments', { permits: 2 });
    const locks = new LockService(lockSide);
    try {
      const lock = await locks.tryAcquire('sem');
      expect(lock?.isHeld).toBe(true);
      // Both permits of another semaphore are still there for the taking.
      const other = await new LockService(lockSide).tryAcquirePermit('payments', { permits: 2 });
      expect(other).not.toBeNull();
      await Promise.all([lock?.release(), other?.release()]);
    } finally {
      await permit.release();
    }
  });
});

/**
 * A wait's first request is its lease's grant: once etcd answered it, the server is answering, and the wait
 * ends at its waitTimeout even while the transaction that puts its key is slow to answer (seen: 100 waits of
 * 300 ms ending at 1,161 ms in a full run, etcd's first transaction answer coming that late on a loaded
 * disk). Before, the wait counted only the transaction's answer, and ended with it.
 */
describe('etcd strategy: a wait whose key is slow to be put', () => {
  const hosts = (): string[] => (process.env.LOCK_TEST_ETCD as string).split(',');
  const TRANSACTION_LATE_MS = 1_500;
  let holderSide: LockManager;
  let slowClient: Etcd3;
  let slow = false;

  beforeAll(() => {
    holderSide = new LockManager(new EtcdLockStrategy({ connection: { hosts: hosts() } }));
    slowClient = new Etcd3({ hosts: hosts() });
    interceptTransactions(slowClient, async (send) => {
      const answer = await send();
      if (slow) await sleep(TRANSACTION_LATE_MS);
      return answer;
    });
  });

  afterAll(async () => {
    slow = false;
    await holderSide.close();
    slowClient.close();
  });

  /** A waiting side with no lease kept yet, so that its wait's first request is a lease grant. */
  const freshWaiter = (): LockManager => new LockManager(new EtcdLockStrategy({ client: slowClient }));

  it('ends a lock wait at its waitTimeout, not when its key is put', async () => {
    const key = `slow-put:${run}`;
    const held = await new LockService(holderSide).acquire(key);
    const waiterSide = freshWaiter();
    slow = true;
    try {
      const started = performance.now();
      await expect(new LockService(waiterSide).acquire(key, { waitTimeout: 300 })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
      // The wait and what a timer may be late on a loaded machine; the transaction answers 1,500 ms late.
      expect(performance.now() - started).toBeLessThan(300 + 700);
    } finally {
      slow = false;
      await held.release();
      await waiterSide.close();
    }
  });

  it('ends a permit wait at its waitTimeout, not when its key is put', async () => {
    const key = `slow-put-permit:${run}`;
    const held = await new LockService(holderSide).acquirePermit(key, { permits: 1 });
    const waiterSide = freshWaiter();
    slow = true;
    try {
      const started = performance.now();
      await expect(new LockService(waiterSide).acquirePermit(key, { permits: 1, waitTimeout: 300 })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
      // The wait and what a timer may be late on a loaded machine; the transaction answers 1,500 ms late.
      expect(performance.now() - started).toBeLessThan(300 + 700);
    } finally {
      slow = false;
      await held.release();
      await waiterSide.close();
    }
  });
});

/**
 * The client the strategy makes from `connection` tracks its calls (to cancel those still in flight at
 * close, see etcd-calls-in-flight.ts) with a grpc-js interceptor of its own. The user's own interceptors,
 * wherever etcd3 lets them be given (the client's `grpcOptions`, the `defaultCallOptions` in either form,
 * as interceptors or as interceptor providers), must still see every call, and the strategy still work:
 * grpc-js refuses a call given both kinds of list, and call options that name interceptors replace the
 * client's.
 */
describe("etcd strategy: the user's own gRPC interceptors on a client the strategy makes", () => {
  const hosts = (): string[] => (process.env.LOCK_TEST_ETCD as string).split(',');
  type Interceptor = (options: { method_definition: { path: string } }, nextCall: (options: unknown) => unknown) => unknown;

  /** A grpc-js interceptor of the user's, which records the calls it sees by method. */
  const recording =
    (seen: string[]): Interceptor =>
    (options, nextCall) => {
      seen.push(options.method_definition.path);
      return nextCall(options);
    };

  const forms: Record<string, (seen: string[]) => Record<string, unknown>> = {
    'defaultCallOptions.interceptors (object)': (seen) => ({ defaultCallOptions: { interceptors: [recording(seen)] } }),
    'defaultCallOptions.interceptors (function)': (seen) => ({ defaultCallOptions: () => ({ interceptors: [recording(seen)] }) }),
    'defaultCallOptions.interceptor_providers': (seen) => ({ defaultCallOptions: { interceptor_providers: [() => recording(seen)] } }),
    'grpcOptions.interceptors': (seen) => ({ grpcOptions: { interceptors: [recording(seen)] } }),
    'grpcOptions.interceptor_providers': (seen) => ({ grpcOptions: { interceptor_providers: [() => recording(seen)] } }),
    'grpcOptions.interceptors, and defaultCallOptions with a deadline only': (seen) => ({
      grpcOptions: { interceptors: [recording(seen)] },
      defaultCallOptions: (context: { isStream: boolean }) => (context.isStream ? {} : { deadline: Date.now() + 10_000 }),
    }),
  };

  for (const [form, options] of Object.entries(forms)) {
    it(`${form}: the user's interceptor sees every kind of call, the waits' watches too`, async () => {
      const seen: string[] = [];
      const manager = new LockManager(new EtcdLockStrategy({ connection: { hosts: hosts(), ...options(seen) } as never }));
      const other = new LockManager(new EtcdLockStrategy({ connection: { hosts: hosts() } }));
      const key = `call-options:${run}:${form}`;
      try {
        const held = await new LockService(other).acquire(key);
        const waiting = new LockService(manager).acquire(key, { waitTimeout: 10_000 });
        await sleep(300);
        await held.release();
        await (await waiting).release();
      } finally {
        await Promise.all([manager.close(), other.close()]);
      }
      expect(seen).toEqual(expect.arrayContaining(['/etcdserverpb.KV/Txn', '/etcdserverpb.Lease/LeaseGrant', '/etcdserverpb.Watch/Watch']));
    }, 30_000);
  }
});
