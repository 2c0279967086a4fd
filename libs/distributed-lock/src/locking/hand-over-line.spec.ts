import { LockLostError } from '../errors/lock-lost.error';
import { handOverLimits, type HandOverLimits } from './hand-over-limits';
import type { LeaseGrant, LockRequest } from './lock-lease';
import { LockManager } from './lock-manager';
import { LockService } from './lock-service';
import type { LockStrategy } from './lock-strategy.interface';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A table of locks that can only be polled, like the lock table: one holder per key, a token that grows
 * with every new holder, and `transfer` as one owner-checked step. Counts the calls the line makes.
 */
class PollingTable implements LockStrategy {
  readonly name = 'polling-table';
  readonly capabilities = { fencing: true, fifo: false, sharedLocks: false, crossProcess: true };
  readonly rows = new Map<string, { owner: string; token: number; until: number }>();
  readonly calls = { tryAcquire: 0, transfer: 0, release: 0 };
  private token = 0;
  /** Makes the next transfer find the row gone (deleted behind the holder). */
  dropOnTransfer = false;

  constructor(readonly handOverLimits: HandOverLimits) {}

  async tryAcquire(request: LockRequest): Promise<LeaseGrant | null> {
    this.calls.tryAcquire += 1;
    const row = this.rows.get(request.key);
    if (row && row.until > Date.now()) return null;
    return this.grant(request);
  }

  async transfer(lease: LeaseGrant, next: LockRequest): Promise<LeaseGrant | null> {
    this.calls.transfer += 1;
    await sleep(1);
    if (this.dropOnTransfer) this.rows.delete(lease.key);
    if (this.rows.get(lease.key)?.owner !== lease.owner) return null;
    return this.grant(next);
  }

  async extend(lease: LeaseGrant, ttlMs: number): Promise<LeaseGrant | null> {
    const row = this.rows.get(lease.key);
    if (row?.owner !== lease.owner) return null;
    row.until = Date.now() + ttlMs;
    return { ...lease, expiresAt: row.until };
  }

  async release(lease: LeaseGrant): Promise<boolean> {
    this.calls.release += 1;
    if (this.rows.get(lease.key)?.owner !== lease.owner) return false;
    this.rows.delete(lease.key);
    return true;
  }

  async close(): Promise<void> {}

  private grant(request: LockRequest): LeaseGrant {
    this.token += 1;
    const until = Date.now() + request.ttlMs;
    this.rows.set(request.key, { owner: request.owner, token: this.token, until });
    return { key: request.key, owner: request.owner, mode: request.mode, fencingToken: this.token, expiresAt: until };
  }
}

describe('the hand-over line of a polling strategy', () => {
  const setUp = (limits: HandOverLimits = handOverLimits(undefined)): { table: PollingTable; locks: LockService; manager: LockManager } => {
    const table = new PollingTable(limits);
    const manager = new LockManager(table);
    return { table, manager, locks: new LockService(manager) };
  };

  it('hands the lock down a line of contenders in arrival order, each with a higher token, and only the first polls', async () => {
    const { table, locks, manager } = setUp({ passes: 100, windowMs: 60_000 });
    const first = await locks.acquire('k');
    const order: number[] = [];
    const tokens: number[] = [];
    const waiting = [0, 1, 2, 3].map((i) =>
      locks.withLock('k', (lock) => {
        order.push(i);
        tokens.push(lock.fencingToken ?? 0);
      }, { waitTimeout: 5_000, reentrant: false }),
    );
    await sleep(60);
    // The first in line polls (with backoff); the three behind it do not.
    const polledWhileHeld = table.calls.tryAcquire;
    expect(polledWhileHeld).toBeLessThanOrEqual(1 + 5);
    await first.release();
    await Promise.all(waiting);
    expect(order).toEqual([0, 1, 2, 3]);
    expect(tokens).toEqual([...tokens].sort((a, b) => a - b));
    expect(new Set([first.fencingToken, ...tokens]).size).toBe(5);
    expect(table.calls.transfer).toBe(4 - 1 + 1); // first → 0 → 1 → 2 → 3
    expect(table.calls.release).toBe(1); // only the last one gives the key back
    expect(table.calls.tryAcquire).toBe(polledWhileHeld);
    expect(table.rows.size).toBe(0);
    await manager.close();
  });

  it('gives the lock back to the backend after the pass limit, and the next contender polls for it', async () => {
    const { table, locks, manager } = setUp({ passes: 1, windowMs: 60_000 });
    const holder = await locks.acquire('k');
    const a = locks.acquire('k', { waitTimeout: 5_000, reentrant: false });
    const b = locks.acquire('k', { waitTimeout: 5_000, reentrant: false });
    await sleep(20);
    await holder.release();
    const lockA = await a; // handed over: the one pass allowed
    expect(table.calls.transfer).toBe(1);
    const polls = table.calls.tryAcquire;
    await lockA.release(); // limit reached: released, and b polls for it
    const lockB = await b;
    expect(table.calls.release).toBe(1);
    expect(table.calls.tryAcquire).toBeGreaterThan(polls);
    await lockB.release();
    await manager.close();
  });

  it('reports a lock that was gone at the hand-over as lost, hands nothing on, and the next contender polls', async () => {
    const { table, locks, manager } = setUp();
    const holder = await locks.acquire('k');
    const next = locks.acquire('k', { waitTimeout: 5_000, reentrant: false });
    await sleep(20);
    table.dropOnTransfer = true;
    expect(await holder.release()).toBe(false);
    expect(() => holder.throwIfLost()).toThrow(LockLostError);
    table.dropOnTransfer = false;
    const lock = await next;
    expect(lock.isHeld).toBe(true);
    expect(table.rows.get('k')?.owner).toBe(lock.owner);
    await lock.release();
    await manager.close();
  });

  it('gives back a lock handed to a contender whose wait ended meanwhile', async () => {
    const { table, locks, manager } = setUp();
    const holder = await locks.acquire('k');
    const controller = new AbortController();
    const leaving = locks.acquire('k', { waitTimeout: 5_000, signal: controller.signal, reentrant: false }).catch((error: unknown) => error);
    await sleep(20);
    const releasing = holder.release();
    controller.abort(); // while the transfer is on its way
    expect(await releasing).toBe(true);
    expect(await leaving).toBeInstanceOf(Error);
    await sleep(20);
    expect(table.rows.size).toBe(0); // not left held by the contender that left
    expect(await locks.tryAcquire('k')).not.toBeNull();
    await manager.close();
  });

  it('times out a contender waiting behind another of its process at its waitTimeout', async () => {
    const { locks, manager } = setUp();
    const holder = await locks.acquire('k');
    const started = Date.now();
    await expect(locks.acquire('k', { waitTimeout: 150, reentrant: false })).rejects.toThrow(/within/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
    expect(Date.now() - started).toBeLessThan(1_000);
    await holder.release();
    await manager.close();
  });

  it('releases on the backend, not to the next contender, when the section lost its lock', async () => {
    const { table, locks, manager } = setUp();
    const holder = await locks.acquire('k', { ttl: 200, autoExtend: false });
    const next = locks.acquire('k', { waitTimeout: 5_000, reentrant: false });
    await sleep(300); // the lease ran out: the holder is told, and its clean-up is no hand-over
    expect(holder.isHeld).toBe(false);
    const lock = await next;
    expect(table.calls.transfer).toBe(0);
    await lock.release();
    await manager.close();
  });
});
