import type { QueryRunner } from 'typeorm';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import { leaseExpiry } from '../../locking/lease-expiry';
import type { LeaseGrant, LockRequest, WaitBudget } from '../../locking/lock-lease';
import type { LeaseLostListener, ReleaseOutcome } from '../../locking/lock-strategy.interface';
import { budgetAborted, budgetWithin, onBudgetAbort } from '../../locking/wait-for-wake';
import { ConnectionSlots } from './connection-slots';
import type { LockDataSource } from './database-client.type';
import { RepeatedCancel } from './repeated-cancel';
import { isFailedInSavepoint, watchConnection } from './typeorm-internals';

/** A lock held on a connection pinned for it (a pessimistic lock's transaction, an advisory lock's session). */
export interface PinnedLock {
  readonly key: string;
  readonly runner: QueryRunner;
  timer: NodeJS.Timeout | undefined;
  readonly listeners: Set<LeaseLostListener>;
  /** The connection (and with it the lock) died while held. */
  connectionLost: boolean;
  stopWatchingConnection: () => void;
}

/** A pinned lock's state before it is held: its key and connection. */
export function pinnedLock(key: string, runner: QueryRunner): PinnedLock {
  return { key, runner, timer: undefined, listeners: new Set(), connectionLost: false, stopWatchingConnection: () => undefined };
}

/** The bound on one acquisition's server-side wait: cancelled at its deadline, on abort, or when the strategy closes. */
export interface WaitCancel {
  /** The cancel was sent, or the caller gave up: a statement that waits must not be sent now. */
  stopped(): boolean;
  /** Stops watching, and waits for a cancel on its way to land (before the holder's first statement on the connection). */
  disarm(): Promise<void>;
}

/**
 * What the strategies that pin a connection per held lock share (`PessimisticLockStrategy`,
 * `AdvisoryLockStrategy`): the connection slots (`maxHeldConnections`), the held locks by owner, each with
 * its lease timer (a lock not extended in time is ended as lost) and its connection watched (a connection
 * that dies is reported at once, `session-ended`), and the cancels of the waits in progress. Ending a
 * lock (commit, unlock) is the strategy's `end`.
 */
export class PinnedLocks<H extends PinnedLock> {
  private readonly held = new Map<string, H>();
  private readonly slots: ConnectionSlots;
  /** The keys of the acquisitions and locks that have a slot, with how many of each. */
  private readonly keysInSlots = new Map<string, number>();
  private readonly waitStoppers = new Set<() => void>();

  constructor(
    private readonly strategy: string,
    private readonly kind: string,
    maxHeldConnections: number,
    private readonly end: (held: H, outcome: ReleaseOutcome) => Promise<boolean>,
  ) {
    this.slots = new ConnectionSlots(maxHeldConnections);
  }

  /**
   * Runs `lock` with a connection slot: at once, or after waiting for one within the budget (then failing
   * with an error naming `maxHeldConnections`, unless others of this process had a slot for the same key:
   * then it resolves null, like any wait that ended behind them; `tryAcquire`, without a budget, resolves
   * null). The slot
   * stays taken while the lock is held, and is given back when `lock` resolves null or throws.
   */
  async inSlot<G>(request: LockRequest, budget: WaitBudget | undefined, lock: (budget: WaitBudget | undefined) => Promise<G | null>): Promise<G | null> {
    const deadline = Date.now() + (budget?.timeoutMs ?? 0);
    if (!(await this.slots.take(budget, deadline))) {
      // Aborted, or behind others of this process for this very key (its holder, its waiters, contenders
      // still cleaning up): the wait ended as it would have with more slots. Otherwise the key may be free
      // and only the slots kept it out: say which option to raise.
      if (!budget || budgetAborted(budget) || this.keysInSlots.has(request.key)) return null;
      throw new LockBackendUnavailableError(
        this.strategy,
        `acquire: all ${this.slots.max} connections allowed to hold ${this.kind} locks stayed in use for the whole wait (raise maxHeldConnections, keeping it below your pool size, or shorten critical sections)`,
        budget.timeoutMs,
        { key: request.key },
      );
    }
    this.occupy(request.key);
    let grant: G | null = null;
    try {
      // Given up while waiting for a slot: give it back untouched.
      if (budget && budgetAborted(budget)) return null;
      grant = await lock(budget && budgetWithin(budget, Math.max(1, deadline - Date.now())));
      return grant;
    } finally {
      if (grant === null) this.giveSlot(request.key);
    }
  }

  /** Counts `key` among the keys of the acquisitions and locks that have a slot. */
  private occupy(key: string): void {
    this.keysInSlots.set(key, (this.keysInSlots.get(key) ?? 0) + 1);
  }

  /** Gives back a slot that an acquisition or a lock for `key` had. */
  private giveSlot(key: string): void {
    const left = (this.keysInSlots.get(key) ?? 1) - 1;
    if (left > 0) this.keysInSlots.set(key, left);
    else this.keysInSlots.delete(key);
    this.slots.give();
  }

  /**
   * Bounds the server-side wait of an acquisition on the connection with server id `connectionId`: at
   * the budget's end, on abort, or on close, `cancel` (KILL QUERY, pg_cancel_backend) is sent from another
   * connection, and sent again until `disarm` says the wait is over (see `RepeatedCancel`). The server's
   * own bound counts whole seconds on MySQL: this one is exact. `waitMs`: what is left of the budget when
   * the wait starts (default: all of it).
   */
  cancelWait(dataSource: LockDataSource, connectionId: number | undefined, cancel: (id: number) => string, budget: WaitBudget | undefined, waitMs = budget?.timeoutMs): WaitCancel {
    // The bound on the server of every statement of the acquisition that can wait: whole seconds on MySQL.
    const serverBoundMs = Math.ceil(Math.max(0, waitMs ?? 0) / 1000) * 1000;
    const repeated = connectionId === undefined ? undefined : new RepeatedCancel(dataSource, cancel(connectionId), serverBoundMs);
    const stop = (): void => repeated?.start();
    const timer = budget ? setTimeout(stop, Math.max(0, waitMs ?? 0)) : undefined;
    const stopWatchingAbort = budget ? onBudgetAbort(budget, stop) : undefined;
    this.waitStoppers.add(stop);
    return {
      stopped: () => repeated?.started === true || (budget !== undefined && budgetAborted(budget)),
      disarm: async () => {
        clearTimeout(timer);
        stopWatchingAbort?.();
        this.waitStoppers.delete(stop);
        await repeated?.stop();
      },
    };
  }

  /** Records a granted lock: its connection watched, its lease counted from `lockedAt`. Resolves the lease's end. */
  hold(owner: string, held: H, lockedAt: number, ttlMs: number): number {
    this.held.set(owner, held);
    // A connection that dies (killed, network, server restart) takes the lock with it: tell the holder now.
    held.stopWatchingConnection = watchConnection(held.runner, () => this.connectionLost(owner, held));
    const expiresAt = leaseExpiry(lockedAt, ttlMs);
    this.armLease(owner, held, expiresAt);
    return expiresAt;
  }

  /** Checks the lock's connection is alive (the lock lives as long as it), and pushes the lease's end. */
  async extend(lease: LeaseGrant, ttlMs: number): Promise<LeaseGrant | null> {
    const held = this.held.get(lease.owner);
    if (!held) return null;
    const sentAt = Date.now();
    try {
      await held.runner.query('SELECT 1');
    } catch (error) {
      // Sent right after a statement that failed inside a savepoint, before the section's rollback to it:
      // refused, yet the lock, outside the savepoint, is held.
      if (!isFailedInSavepoint(held.runner, error)) {
        await this.finish(lease.owner, 'lost');
        return null;
      }
    }
    const expiresAt = leaseExpiry(sentAt, ttlMs);
    this.armLease(lease.owner, held, expiresAt);
    return { ...lease, expiresAt };
  }

  onLeaseLost(lease: LeaseGrant, listener: LeaseLostListener): () => void {
    const held = this.held.get(lease.owner);
    held?.listeners.add(listener);
    return () => held?.listeners.delete(listener);
  }

  /** Ends the owner's lock with the strategy's `end`, and gives its slot back. Resolves false when it was not held. */
  async finish(owner: string, outcome: ReleaseOutcome): Promise<boolean> {
    const held = this.held.get(owner);
    if (!held) return false;
    this.held.delete(owner);
    clearTimeout(held.timer);
    held.stopWatchingConnection();
    try {
      return await this.end(held, outcome);
    } finally {
      this.giveSlot(held.key);
    }
  }

  /**
   * Ends every wait at once (their acquisitions resolve as timed out), then every held lock as lost: its
   * section may still be running.
   */
  async close(): Promise<void> {
    for (const stop of [...this.waitStoppers]) stop();
    this.slots.giveUpAll();
    await Promise.all([...this.held.keys()].map((owner) => this.finish(owner, 'lost')));
  }

  /** The holder's connection died: the lock (and its transaction) went with it. */
  private connectionLost(owner: string, held: H): void {
    if (this.held.get(owner) !== held) return;
    held.connectionLost = true;
    this.endAndTell(owner, held, 'session-ended');
  }

  /** At the lease's end a holder that did not extend loses the lock: its writes never commit late. */
  private armLease(owner: string, held: H, expiresAt: number): void {
    clearTimeout(held.timer);
    held.timer = setTimeout(() => this.endAndTell(owner, held, 'expired'), Math.max(0, expiresAt - Date.now()));
    held.timer.unref?.();
  }

  /**
   * Tells the holder first, then ends the lock: the end (a rollback, an unlock) is what lets the next
   * contender in, so a holder told after it could still believe it holds while the next one is inside.
   */
  private endAndTell(owner: string, held: H, reason: 'session-ended' | 'expired'): void {
    for (const listener of [...held.listeners]) listener(reason);
    // The holder's lock service releases it too on being told; whichever comes first ends it, once.
    void this.finish(owner, 'lost').catch(() => false);
  }
}
