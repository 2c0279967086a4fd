import type { QueryRunner } from 'typeorm';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import { DeadlineClock, type Deadline } from '../../locking/deadline-clock';
import { leaseExpiry } from '../../locking/lease-expiry';
import type { LeaseGrant, LockRequest, WaitBudget } from '../../locking/lock-lease';
import type { LeaseLostListener, ReleaseOutcome } from '../../locking/lock-strategy.interface';
import { budgetAborted, budgetWithin, onBudgetAbort } from '../../locking/wait-for-wake';
import { ConnectionSlots } from './connection-slots';
import type { LockDataSource } from './database-client.type';
import { connectInTime } from './pool-connection';
import { SessionEnder, type SessionEnd } from './session-end';
import { untilGivenUp } from '../../locking/until-given-up';
import { dropLeftPoolSockets } from './pool-sockets';
import { closeIfOpen, connectionIdOf, discardConnection, isFailedInSavepoint, leavePool, watchConnection } from './typeorm-internals';

/** A lock held on a connection pinned for it (a pessimistic lock's transaction, an advisory lock's session). */
export interface PinnedLock {
  readonly key: string;
  readonly runner: QueryRunner;
  /** The lease's end, on the strategy's clock. */
  leaseEnd: Deadline | undefined;
  readonly listeners: Set<LeaseLostListener>;
  /** The connection (and with it the lock) died while held. */
  connectionLost: boolean;
  stopWatchingConnection: () => void;
}

/** A pinned lock's state before it is held: its key and connection. */
export function pinnedLock(key: string, runner: QueryRunner): PinnedLock {
  return { key, runner, leaseEnd: undefined, listeners: new Set(), connectionLost: false, stopWatchingConnection: () => undefined };
}

/** How close to its deadline a wait given up counts as timed out rather than aborted (timers may fire early). */
const DEADLINE_SLACK_MS = 2;

/** The bound on one acquisition's server-side wait: its session ended on abort, on close, or at the deadline. */
export interface WaitBound {
  /** The wait was cut (the caller gave up, the strategy closes, or its deadline passed): a statement that waits must not be sent now. */
  stopped(): boolean;
  /**
   * Stops watching. Resolves true when the wait's session was ended (then its connection is dead: it must be
   * discarded, and whatever the wait was granted went with it, confirmed by the server); false when it was
   * not (a kill still waiting for a pool connection is dropped: the wait ended by itself).
   */
  disarm(): Promise<boolean>;
}

/**
 * What the strategies that pin a connection per held lock share (`PessimisticLockStrategy`,
 * `AdvisoryLockStrategy`): the connection slots (`maxHeldConnections`), the held locks by owner, each with
 * its lease's end on the strategy's clock (a lock not extended in time is ended as lost) and its connection watched (a connection
 * that dies is reported at once, `session-ended`), and the cancels of the waits in progress. Ending a
 * lock (commit, unlock) is the strategy's `end`.
 */
export class PinnedLocks<H extends PinnedLock> {
  private readonly held = new Map<string, H>();
  private readonly slots: ConnectionSlots;
  /** The keys of the acquisitions and locks that have a slot, with how many of each. */
  private readonly keysInSlots = new Map<string, number>();
  private readonly waitStoppers = new Set<() => void>();
  /** Session ends under way (waits cut, locks ended): close() resolves once the server confirmed each. */
  private readonly ending = new Set<Promise<boolean>>();
  private readonly sessions: SessionEnder;
  /**
   * One runtime timer for the deadlines of the strategy's locks: each lease's end and each server-side wait's
   * bound. (The pool wait's bound has a timer of its own, see `connectInTime`.)
   */
  private readonly clock = new DeadlineClock();

  constructor(
    private readonly strategy: string,
    private readonly kind: string,
    maxHeldConnections: number,
    private readonly end: (held: H, outcome: ReleaseOutcome) => Promise<boolean | 'session-ended'>,
    /** The size of the pool the connections come from (see `poolSizeOf`), when known: for the error that names it. */
    private readonly poolSize: number | undefined,
    private readonly dataSource: LockDataSource,
    /** The statement that checks a held lock's connection is alive (a strategy may mark its own, see `holderCheck`). */
    private readonly checkStatement = 'SELECT 1',
  ) {
    this.slots = new ConnectionSlots(maxHeldConnections);
    this.sessions = new SessionEnder(dataSource);
  }

  /**
   * Runs `lock` with a connection slot: at once, or after waiting for one within the budget (then failing
   * with an error naming `maxHeldConnections`, unless others of this process had a slot for the same key:
   * then it resolves null, like any wait that ended behind them; `tryAcquire`, without a budget, resolves
   * null). The slot
   * stays taken while the lock is held, and is given back when `lock` resolves null or throws.
   */
  private slotsExhausted(request: LockRequest, waitedMs: number): LockBackendUnavailableError {
    return new LockBackendUnavailableError(
      this.strategy,
      'acquire',
      waitedMs,
      {
        key: request.key,
        hint:
          `All ${this.slots.max} connections allowed to hold ${this.kind} locks in this process stayed in use for the whole wait: ` +
          `raise maxHeldConnections, keeping it below your pool size${this.poolSize === undefined || !Number.isFinite(this.poolSize) ? '' : ` of ${this.poolSize}`}, or shorten critical sections.`,
      },
    );
  }

  /**
   * Waits for a slot within the budget; false when aborted, or when the wait ended behind others of this
   * process for this very key (its holder, its waiters, contenders still cleaning up): a timeout, as it would
   * have been with more slots. Otherwise the key may be free and only the slots kept it out: it throws the
   * error that says which option to raise, whichever of the lock service or the slots sees the deadline first.
   */
  private async waitForSlot(request: LockRequest, budget: WaitBudget, deadline: number): Promise<boolean> {
    const heldBack = (): LockBackendUnavailableError | undefined => (this.keysInSlots.has(request.key) ? undefined : this.slotsExhausted(request, budget.timeoutMs));
    budget.heldBackLocally?.(heldBack);
    const slotted = await this.slots.take(budget, deadline);
    budget.heldBackLocally?.(undefined);
    if (slotted || budgetAborted(budget)) return slotted;
    const error = heldBack();
    if (error) throw error;
    return false;
  }

  async inSlot<G>(request: LockRequest, budget: WaitBudget | undefined, lock: (budget: WaitBudget | undefined) => Promise<G | null>): Promise<G | null> {
    const deadline = Date.now() + (budget?.timeoutMs ?? 0);
    // A free slot (the usual case) is taken at once, with nothing made for the wait below.
    if (this.slots.hasFree || !budget) {
      if (!(await this.slots.take(budget, deadline))) return null;
    } else if (!(await this.waitForSlot(request, budget, deadline))) {
      return null;
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

  /**
   * Takes the connection of an acquisition of `key` from the pool within its wait, until `deadline` (see
   * `connectInTime`: false when the caller gave up, an error naming the pool when none came in time).
   * close() ends the wait at once. On false or an error the runner is not the caller's to release.
   */
  connect(runner: QueryRunner, dataSource: LockDataSource, key: string, budget: WaitBudget | undefined, deadline: number): Promise<boolean> {
    const request = { strategy: this.strategy, key, poolSize: this.poolSize, maxHeld: this.slots.max };
    return connectInTime(runner, dataSource, request, budget, deadline, (stop) => {
      this.waitStoppers.add(stop);
      return () => void this.waitStoppers.delete(stop);
    });
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
   * Bounds the server-side wait of an acquisition on `runner`'s connection: on abort, on close, and at the
   * budget's end unless the server's own bound ends the wait there (`exactBound`: PostgreSQL's lock_timeout,
   * MariaDB's max_statement_time and fractional GET_LOCK; MySQL 8 counts whole seconds), the connection's
   * session is ended from another connection (`SessionEnder`), which takes the wait, and anything it was
   * granted, along, whatever the statement's state: sent or not yet, waiting or between two statements.
   * The strategy sends no statement that waits once `stopped()`. `waitMs`: what is left of the budget when
   * the wait starts (default: all of it).
   *
   * Why not at an exact deadline too: the statement ends there by itself, and a session ended for every
   * wait that times out would cost a new connection each, which a burst of short waits turns into an
   * exhausted pool. The lock service gives a grant that comes in that moment straight back.
   */
  boundWait(runner: QueryRunner, budget: WaitBudget | undefined, exactBound: boolean, waitMs = budget?.timeoutMs): WaitBound {
    const id = connectionIdOf(runner);
    const endsAt = Date.now() + (waitMs ?? 0);
    let cut = false;
    let ending: SessionEnd | undefined;
    const stop = (atDeadline: boolean): void => {
      if (cut || (atDeadline && exactBound)) return;
      cut = true;
      if (id === undefined) return;
      ending = this.sessions.start(id);
      this.track(ending.done);
    };
    const bound = budget && !exactBound ? this.clock.after(Math.max(0, waitMs ?? 0), () => stop(true)) : undefined;
    // The lock service gives the budget up at its deadline too: that is no abort (timers may run a little early).
    const stopWatchingAbort = budget ? onBudgetAbort(budget, () => stop(Date.now() >= endsAt - DEADLINE_SLACK_MS)) : undefined;
    const close = (): void => stop(false);
    this.waitStoppers.add(close);
    return {
      stopped: () => cut || (budget !== undefined && budgetAborted(budget)),
      disarm: async () => {
        bound?.cancel();
        stopWatchingAbort?.();
        this.waitStoppers.delete(close);
        if (!ending || ending.dropIfUnsent()) return false;
        await ending.done;
        return true;
      },
    };
  }

  /**
   * Ends the session of a connection that may hold a lock (a lock lost, closed, or whose end failed), and
   * resolves once the server confirmed it is gone: the connection leaves the pool, and is killed from
   * another one, so that neither a statement still running on it nor a server slow to notice a closed
   * socket keeps the lock after this resolves. The statement in flight, if any, fails (the server closed
   * the connection under it).
   */
  async endSession(runner: QueryRunner): Promise<void> {
    const id = connectionIdOf(runner);
    if (id === undefined) return discardConnection(runner);
    const ending = this.sessions.start(id);
    this.track(ending.done);
    await leavePool(runner);
    await ending.done;
    closeIfOpen(runner);
  }

  /** Keeps a session end under way for close(), which waits for it. */
  private track(done: Promise<boolean>): void {
    this.ending.add(done);
    void done.then(() => this.ending.delete(done));
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
      await held.runner.query(this.checkStatement);
    } catch (error) {
      // Sent right after a statement that failed inside a savepoint, before the section's rollback to it:
      // refused, yet the lock, outside the savepoint, is held.
      if (!isFailedInSavepoint(held.runner, error)) {
        await this.finish(lease.owner, 'lost');
        return null;
      }
    }
    // Ended while the check was on its way (released, lost, closed): nothing to extend.
    if (this.held.get(lease.owner) !== held) return null;
    const expiresAt = leaseExpiry(sentAt, ttlMs);
    this.armLease(lease.owner, held, expiresAt);
    return { ...lease, expiresAt };
  }

  onLeaseLost(lease: LeaseGrant, listener: LeaseLostListener): () => void {
    const held = this.held.get(lease.owner);
    held?.listeners.add(listener);
    return () => held?.listeners.delete(listener);
  }

  /**
   * Ends the owner's lock with the strategy's `end`, and gives its slot back. Resolves false when it was not
   * held, 'session-ended' when its connection turned out ended under it (see `LockStrategy.release`).
   */
  async finish(owner: string, outcome: ReleaseOutcome): Promise<boolean | 'session-ended'> {
    const held = this.held.get(owner);
    if (!held) return false;
    this.held.delete(owner);
    held.leaseEnd?.cancel();
    held.stopWatchingConnection();
    try {
      return await this.end(held, outcome);
    } finally {
      this.giveSlot(held.key);
    }
  }

  /**
   * Ends every wait at once (their acquisitions resolve as timed out), then every held lock as lost: its
   * section may still be running. Resolves once the server confirmed that every session ended for it is
   * gone, and with them every lock they held or were about to be granted; or once `giveUp` aborts (the
   * server does not answer: the strategy then drops the connections, see `LockStrategy.close`).
   */
  async close(giveUp?: AbortSignal): Promise<void> {
    for (const stop of [...this.waitStoppers]) stop();
    this.slots.giveUpAll();
    const ended = Promise.all([...this.held.keys()].map((owner) => this.finish(owner, 'lost'))).then(() => Promise.all([...this.ending]));
    await untilGivenUp(ended, giveUp);
    // Given up: the connections taken out of the pool for a session end are ours to drop, whoever owns the pool.
    if (giveUp?.aborted) dropLeftPoolSockets(this.dataSource);
  }

  /** The holder's connection died: the lock (and its transaction) went with it. */
  private connectionLost(owner: string, held: H): void {
    if (this.held.get(owner) !== held) return;
    held.connectionLost = true;
    this.endAndTell(owner, held, 'session-ended');
  }

  /** At the lease's end a holder that did not extend loses the lock: its writes never commit late. */
  private armLease(owner: string, held: H, expiresAt: number): void {
    held.leaseEnd?.cancel();
    held.leaseEnd = this.clock.after(Math.max(0, expiresAt - Date.now()), () => this.endAndTell(owner, held, 'expired'));
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
