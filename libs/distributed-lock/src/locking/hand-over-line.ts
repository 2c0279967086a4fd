import type { HandOverLimits } from './hand-over-limits';
import type { LeaseGrant, LockRequest } from './lock-lease';

/** An acquisition waiting in a process's line for a key. */
export interface LineWaiter {
  readonly request: LockRequest;
  /** The lock was handed to this waiter (its grant). */
  deliver(grant: LeaseGrant): void;
  /** The backend failed the first of the line (it does not answer): this waiter's wait fails with `error`. */
  fail(error: unknown): void;
  /** Something changed: the waiter looks again (it may be the one to ask the backend now). */
  wake(): void;
  /** True while it waits in the backend's own queue (`LockStrategy.acquire`): the backend will grant it, not a hand-over. */
  inBackendQueue: boolean;
  /**
   * True while a hand-over to it is on its way: it must not ask the backend meanwhile, under the owner id the
   * hand-over names (a hand-over that ends after its caller gave up is still delivered to it, see `lateHandOver`).
   */
  handOverPending: boolean;
  /**
   * True while its own try of the backend is on its way: it must not be handed the lock meanwhile. Both would
   * grant it under one owner id, and a backend that re-enters its owner's hold (the lock table) would count
   * two holds, of which the waiter gives one back: the other kept the key taken after its release.
   */
  askingBackend: boolean;
}

/**
 * The contenders of one lock service for one key, for a strategy that hands locks on (see
 * `LockStrategy.transfer`): served in arrival order, only the first of them asks the backend (polls it, or
 * waits in its queue) and only while no contender of this process holds the key, and a holder that
 * releases hands the lock to the next one instead. Lock
 * cohorting (Dice, Marathe and Shavit), bounded by `HandOverLimits` so that other processes get their turn.
 */
export class HandOverLine {
  readonly waiters: LineWaiter[] = [];
  /** The owner id of this process's holder of the key, if any. */
  private holderOwner: string | undefined;
  /** When the lock was taken from the backend, and how often it was passed on since. */
  private takenAt = 0;
  private passes = 0;
  /** The lock went back to the backend at its limit while contenders waited here: they let others in first. */
  private yielding = false;

  /** True while a contender of this process holds the key: asking the backend would be refused. */
  get held(): boolean {
    return this.holderOwner !== undefined;
  }

  get isEmpty(): boolean {
    return this.holderOwner === undefined && this.waiters.length === 0;
  }

  /** `waiter` may ask the backend: it is first, and nobody here holds the key. */
  mayPoll(waiter: LineWaiter): boolean {
    return this.holderOwner === undefined && this.waiters[0] === waiter && !waiter.handOverPending;
  }

  /** The backend granted the key to `owner` (not a hand-over). */
  takenFromBackend(owner: string): void {
    this.holderOwner = owner;
    this.takenAt = Date.now();
    this.passes = 0;
  }

  /** True when `owner` holds the key here. */
  isHolder(owner: string): boolean {
    return this.holderOwner === owner;
  }

  /**
   * The waiter the holder `owner` may hand the lock to now, within the limits; undefined to release it.
   * At a limit the line yields: the next contender here waits a first retry delay before it polls, so that
   * a contender of another process polling meanwhile finds the key free (a process that polls right
   * away would always win it back).
   */
  successorOf(owner: string, limits: HandOverLimits): LineWaiter | undefined {
    if (this.holderOwner !== owner) return undefined;
    const next = this.waiters[0];
    // One already in the backend's queue is served there (the holder here got the lock some other way).
    // Or one asking the backend itself right now (see `LineWaiter.askingBackend`): the lock goes back to the
    // backend, where that try may take it.
    if (!next || next.inBackendQueue || next.handOverPending || next.askingBackend) return undefined;
    if (this.passes >= limits.passes || Date.now() - this.takenAt >= limits.windowMs) {
      this.yielding = true;
      return undefined;
    }
    return next;
  }

  /** True once after the line yielded (see `successorOf`): the caller pauses before it polls. */
  takeYield(): boolean {
    const yielding = this.yielding;
    this.yielding = false;
    return yielding;
  }

  /** The lock passed from `owner` to `next` (still first in line): it leaves the line holding the key. */
  handedTo(owner: string, next: LineWaiter, grant: LeaseGrant): boolean {
    if (this.holderOwner !== owner || this.waiters[0] !== next) return false;
    this.passTo(next, grant);
    return true;
  }

  /**
   * A hand-over to `next` that came back after its holder's release had given up on it (the release's bound
   * ran out, and the holder is gone here): the lock is `next`'s on the backend. Delivered if `next` still
   * waits first in line with nobody holding here; false otherwise (the caller gives the lock back).
   */
  lateHandOver(next: LineWaiter, grant: LeaseGrant): boolean {
    if (this.holderOwner !== undefined || this.waiters[0] !== next) return false;
    this.passTo(next, grant);
    return true;
  }

  /** `next`, first in line, leaves it holding the key, handed over. */
  private passTo(next: LineWaiter, grant: LeaseGrant): void {
    this.waiters.shift();
    this.holderOwner = next.request.owner;
    this.passes += 1;
    next.deliver(grant);
  }

  /** `owner` no longer holds the key here (released, lost, or given back): the first waiter looks again. */
  holderGone(owner: string): void {
    if (this.holderOwner !== owner) return;
    this.holderOwner = undefined;
    this.waiters[0]?.wake();
  }

  /** Every waiter behind `first` fails with `error` (see `LineWaiter.fail`). */
  failBehind(first: LineWaiter, error: unknown): void {
    for (const waiter of this.waiters) if (waiter !== first) waiter.fail(error);
  }

  join(waiter: LineWaiter): void {
    this.waiters.push(waiter);
  }

  /** `waiter` leaves (granted, timed out, aborted); if it was first, the next one looks again. */
  leave(waiter: LineWaiter): void {
    const index = this.waiters.indexOf(waiter);
    if (index < 0) return;
    this.waiters.splice(index, 1);
    if (index === 0) this.waiters[0]?.wake();
  }
}
