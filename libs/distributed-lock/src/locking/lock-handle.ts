import { LockNotHeldError } from '../errors/lock-not-held.error';
import { assertDuration, MIN_TTL_MS } from './lock-options';
import type { HeldLock } from './held-lock';
import type { LeaseGrant, LockMode } from './lock-lease';
import type { ReleaseOutcome } from './lock-strategy.interface';

/** A held lock on one or several keys, as handed to callers. */
export interface Lock extends AsyncDisposable {
  /** The keys held, prefix included, in acquisition order. */
  readonly keys: readonly string[];
  /** The fencing token of a single-key lock on a strategy with fencing; undefined otherwise. */
  readonly fencingToken: number | undefined;
  /** Aborted with a `LockLostError` the moment any of the keys is known lost. */
  readonly signal: AbortSignal;
  /** True until released or lost. */
  readonly isHeld: boolean;
  /** Release (owner-checked). Safe to call twice. Resolves false when the lock was no longer ours. */
  release(): Promise<boolean>;
  /**
   * Extend the lease to now + `ttl` ms (default: the lease the lock was taken with; 10 ms to about 24.8
   * days, fractions rounded up). A bad `ttl` throws `InvalidLockOptionsError` before the server is asked.
   */
  extend(ttl?: number): Promise<void>;
  /** Throws the `LockLostError` if the lock was lost; call it before writing what the lock protects. */
  throwIfLost(): void;
}

/**
 * A held lock on one key, as users hold it. Returned by `LockService.acquire(key)`. Each acquisition gets
 * its own handle; reentrant handles share one `HeldLock` (the lock service's state of the strategy's
 * `LeaseGrant`, see docs/writing-a-strategy.md, "One lock, three nouns").
 */
export class LockHandle implements Lock {
  private released = false;

  /** @internal */
  constructor(
    private readonly held: HeldLock,
    /** True when this handle re-entered a lock already held in the same call chain. */
    readonly reentered: boolean,
  ) {}

  get key(): string {
    return this.held.grant.key;
  }

  get keys(): readonly string[] {
    return [this.held.grant.key];
  }

  /** Unique id of the acquisition (shared by reentrant handles). */
  get owner(): string {
    return this.held.grant.owner;
  }

  get mode(): LockMode {
    return this.held.grant.mode;
  }

  get fencingToken(): number | undefined {
    return this.held.grant.fencingToken;
  }

  /** Local time (ms since epoch) at which the current lease ends unless extended. */
  get expiresAt(): number {
    return this.held.grant.expiresAt;
  }

  get signal(): AbortSignal {
    return this.held.signal;
  }

  get isHeld(): boolean {
    return !this.released && this.held.isHeld;
  }

  release(): Promise<boolean> {
    return this.releaseWith('completed');
  }

  /** @internal release telling the strategy how the section ended (a failed one is rolled back where the lock is a transaction). */
  releaseWith(outcome: ReleaseOutcome): Promise<boolean> {
    if (this.released) return Promise.resolve(false);
    this.released = true;
    return this.held.leave(outcome);
  }

  /**
   * Release, but keep the lock taken for `delayMs` more (0 to about 24.8 days; 0 releases now): the
   * caller is done with it at once (`isHeld` is false), and the lock ends `delayMs` from now, by a
   * shortened lease where the store expires keys on its own clock (Redis, Redlock, the lock table), and by
   * a release at the end of the delay in every case. Keeps a fast job's lock long enough that an instance
   * whose clock is behind, or whose timer fires late, does not run it again (see `@ScheduledLock`'s
   * `lockAtLeastFor`). A process that dies during the delay leaves the lock to its lease: the shortened
   * one, ZooKeeper's session, the pessimistic lock's connection (ends at once), etcd's lease TTL. At
   * shutdown the delay is not waited for. Resolves false when the lock turned out no longer held (its
   * loss is recorded as a release would: `throwIfLost()` throws).
   */
  async releaseAfter(delayMs: number): Promise<boolean> {
    return this.releaseAfterWith(delayMs, 'completed');
  }

  /** @internal `releaseAfter` telling the strategy how the section ended (see `releaseWith`). */
  async releaseAfterWith(delayMs: number, outcome: ReleaseOutcome): Promise<boolean> {
    const delay = assertDuration(delayMs, 'delayMs', 0);
    if (this.released) return false;
    this.released = true;
    return this.held.releaseAfter(delay, outcome);
  }

  /** What the strategy granted; strategies document what their grants carry (e.g. a transaction). */
  get grant(): LeaseGrant {
    return this.held.grant;
  }

  async extend(ttl?: number): Promise<void> {
    // A bad ttl is a bad input whatever the lock's state: said first.
    if (ttl !== undefined) assertDuration(ttl, 'ttl', MIN_TTL_MS);
    if (this.released) throw new LockNotHeldError(this.key, this.held.strategyName);
    await this.held.extend(ttl);
  }

  throwIfLost(): void {
    const lost = this.held.lostReason;
    if (lost) throw lost;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  /** @internal the shared grant, for the reentrancy context. */
  get heldLock(): HeldLock {
    return this.held;
  }
}

/** Several keys held together, taken in a fixed (sorted) order so that two callers cannot deadlock. */
export class MultiLockHandle implements Lock {
  private combined: AbortSignal | undefined;

  /** @internal */
  constructor(readonly locks: readonly LockHandle[]) {}

  get keys(): readonly string[] {
    return this.locks.map((lock) => lock.key);
  }

  get fencingToken(): number | undefined {
    return this.locks.length === 1 ? this.locks[0].fencingToken : undefined;
  }

  /** Fencing token per key (strategies with fencing). */
  get fencingTokens(): ReadonlyMap<string, number> {
    const tokens = new Map<string, number>();
    for (const lock of this.locks) if (lock.fencingToken !== undefined) tokens.set(lock.key, lock.fencingToken);
    return tokens;
  }

  get signal(): AbortSignal {
    this.combined ??= this.locks.length === 1 ? this.locks[0].signal : AbortSignal.any(this.locks.map((lock) => lock.signal));
    return this.combined;
  }

  get isHeld(): boolean {
    return this.locks.every((lock) => lock.isHeld);
  }

  /** Releases in reverse order; every key is attempted even if one fails, and the first failure is thrown. */
  async release(): Promise<boolean> {
    return this.releaseWith('completed');
  }

  /** @internal */
  async releaseWith(outcome: ReleaseOutcome): Promise<boolean> {
    let allHeld = true;
    let firstError: unknown;
    for (const lock of [...this.locks].reverse()) {
      try {
        allHeld = (await lock.releaseWith(outcome)) && allHeld;
      } catch (error) {
        firstError ??= error;
      }
    }
    if (firstError !== undefined) throw firstError;
    return allHeld;
  }

  async extend(ttl?: number): Promise<void> {
    await Promise.all(this.locks.map((lock) => lock.extend(ttl)));
  }

  throwIfLost(): void {
    for (const lock of this.locks) lock.throwIfLost();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }
}
