import { LockCommitFailedError } from '../errors/lock-commit-failed.error';
import { LockLostError, type LockLostReason } from '../errors/lock-lost.error';
import { LockNotHeldError } from '../errors/lock-not-held.error';
import type { DeadlineClock, Deadline } from './deadline-clock';
import { permitFields, type LockEventBase, type LockEvents } from './lock-events';
import type { LeaseGrant } from './lock-lease';
import type { LockStrategy, ReleaseOutcome } from './lock-strategy.interface';
import { LeaseWatchdog } from './lease-watchdog';
import { assertDuration, LOCK_DEFAULTS, MIN_TTL_MS } from './lock-options';
import { boundedCall, simpleBoundedCall } from './waits/bounded-call';

/** What a held lock needs from the manager that granted it. */
export interface HeldLockDeps {
  readonly strategy: LockStrategy;
  /** The lock manager's clock: every bound, renewal and delay of the lock is a deadline on it. */
  readonly clock: DeadlineClock;
  /** The strategy's name in errors and events. */
  readonly name: string;
  readonly operationTimeout: number;
  readonly events: LockEvents;
  /** Called once when the lock is released or lost, so the manager forgets it. */
  readonly onFinished: (lock: HeldLock) => void;
  /** A release failed with `error`: the manager may try it again in the background (see ReleaseRetries). */
  readonly releaseFailed?: (ops: LockStrategy, lease: LeaseGrant, outcome: ReleaseOutcome, error: unknown, untilMs: number) => void;
  /**
   * Releases by handing the lock to the next contender of the process instead, when the manager has one
   * (see `LockStrategy.transfer`); undefined to release on the backend. Resolves whether it was still held.
   */
  readonly handOver?: (lease: LeaseGrant, outcome: ReleaseOutcome) => Promise<boolean> | undefined;
}

/**
 * The lock service's state of one `LeaseGrant` from a strategy, shared by every reentrant handle on it.
 * Owns the lease's liveness (the watchdog), the hold count, and the lost signal. Internal: users see
 * `LockHandle` (see docs/writing-a-strategy.md, "One lock, three nouns").
 */
export class HeldLock {
  /** `lingering`: the holder is done, but the lock stays taken until a `releaseAfter` delay ends. */
  private state: 'held' | 'lingering' | 'released' | 'lost' = 'held';
  private holds = 1;
  // Created on first use: most locks are released without anyone reading their signal.
  private controller: AbortController | undefined;
  private lostError: LockLostError | undefined;
  private readonly watchdog: LeaseWatchdog;
  private readonly unsubscribeLost: (() => void) | undefined;
  /** The release on its way (or the clean-up after a loss), for close(). */
  private releasing: Promise<unknown> | undefined;
  /** The timer of a `releaseAfter` delay, and what it runs (so that close() can run it at once). */
  private linger: { timer: Deadline; release: () => Promise<boolean> } | undefined;
  /**
   * When the last renewal was sent, and the ttl it asked for: the backend may have applied it even where its
   * answer never came (cut at the lease's end, or still on its way), so its lease may end as late as that.
   */
  private renewalSentAt = 0;
  private renewalTtlMs = 0;
  readonly acquiredAt = Date.now();

  constructor(
    private readonly deps: HeldLockDeps,
    private lease: LeaseGrant,
    private readonly ttl: number,
    autoExtend: boolean,
  ) {
    const strategyName = deps.name;
    this.watchdog = new LeaseWatchdog(
      {
        expiresAt: () => this.lease.expiresAt,
        renew: () => this.renew(this.ttl),
        onGone: (reason) => this.markLost(reason),
        onRenewFailed: (error) =>
          deps.events.emit('backgroundError', { strategy: strategyName, key: lease.key, operation: 'extend', error }),
      },
      autoExtend ? Math.max(1, Math.floor(ttl * LOCK_DEFAULTS.extendFraction)) : undefined,
      ttl,
      deps.clock,
    );
    this.watchdog.start();
    this.unsubscribeLost = deps.strategy.onLeaseLost?.(lease, (reason) => this.markLost(reason));
  }

  get grant(): LeaseGrant {
    return this.lease;
  }

  /** Aborted with a `LockLostError` as soon as the lock is known lost. */
  get signal(): AbortSignal {
    this.checkLease();
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.lostError) this.controller.abort(this.lostError);
    }
    return this.controller.signal;
  }

  /** The loss, once the lock is known lost. */
  get lostReason(): LockLostError | undefined {
    this.checkLease();
    return this.lostError;
  }

  get isHeld(): boolean {
    this.checkLease();
    return this.state === 'held';
  }

  get strategyName(): string {
    return this.deps.name;
  }

  get holdCount(): number {
    return this.holds;
  }

  /** One more reentrant hold on the same grant. */
  enter(): void {
    this.holds += 1;
  }

  /** Drop one hold; the last one releases the lock on the backend. Resolves whether it was still ours. */
  leave(outcome: ReleaseOutcome = 'completed'): Promise<boolean> {
    if (this.state !== 'held') return Promise.resolve(false);
    this.holds -= 1;
    if (this.holds > 0) return Promise.resolve(true);
    return this.releaseNow(outcome);
  }

  /**
   * Release on the backend now, whatever the hold count (shutdown). A release that finds the lock no
   * longer held records the loss (`lostReason`, the `lost` event): the section it ended was not alone.
   */
  releaseNow(outcome: ReleaseOutcome = 'completed'): Promise<boolean> {
    if (this.state !== 'held') return Promise.resolve(false);
    this.state = 'released';
    this.stopLiveness();
    const releasing = this.releaseOnBackend(outcome);
    this.releasing = releasing;
    return releasing;
  }

  /**
   * Drop one hold; the last one ends the holder's use of the lock but keeps the lock taken for `delayMs`
   * more, then releases it (ShedLock's "lock at least for"). The lease is first set to end `delayMs` from
   * now, so that a process that dies meanwhile leaves a lock that still ends about then (on the store's
   * clock where the store expires keys: Redis, Redlock, the lock table; ZooKeeper and the pessimistic lock
   * end with their session or connection instead, etcd with its lease's own TTL). Where the lock is a
   * transaction, the lease is set a little longer, so that the COMMIT at the end of the delay comes first.
   * Resolves false when that extension found the lock no longer held (recorded as a loss, as a release
   * would); true otherwise, also when the extension failed (the lease then ends when it would have).
   */
  async releaseAfter(delayMs: number, outcome: ReleaseOutcome = 'completed'): Promise<boolean> {
    if (this.state !== 'held') return false;
    this.holds -= 1;
    if (this.holds > 0) return true;
    if (delayMs <= 0) return this.releaseNow(outcome);
    this.state = 'lingering';
    this.stopLiveness();
    const startedAt = Date.now();
    let release = (): Promise<boolean> => Promise.resolve(false);
    const done = new Promise<boolean>((resolve) => {
      release = () => {
        this.linger?.timer.cancel();
        this.linger = undefined;
        if (this.state !== 'lingering') return Promise.resolve(false);
        this.state = 'released';
        const releasing = this.releaseOnBackend(outcome, false);
        resolve(releasing.catch(() => false));
        return releasing;
      };
    });
    const timer = this.deps.clock.after(delayMs, () => {
      void release().catch((error: unknown) =>
        this.deps.events.emit('backgroundError', { strategy: this.deps.name, key: this.lease.key, operation: 'release', error }),
      );
    });
    this.linger = { timer, release };
    this.releasing = done;
    const { strategy, operationTimeout, events } = this.deps;
    const margin = strategy.capabilities.transactional ? operationTimeout : 0;
    let extended: LeaseGrant | null;
    try {
      extended = await simpleBoundedCall(this.deps.clock, this.deps.name, 'extend', this.lease.key, operationTimeout, () =>
        strategy.extend(this.lease, Math.max(MIN_TTL_MS, delayMs - (Date.now() - startedAt)) + margin),
      );
    } catch (error) {
      events.emit('backgroundError', { strategy: this.deps.name, key: this.lease.key, operation: 'extend', error });
      return true;
    }
    if (extended) {
      this.lease = extended;
      return true;
    }
    if (this.state !== 'lingering') return true;
    // Not ours any more: the section that just ended was not alone. Reported like a release that finds so.
    timer.cancel();
    this.linger = undefined;
    this.releasing = undefined;
    this.state = 'lost';
    this.recordLoss('not-held-at-release');
    this.deps.onFinished(this);
    return false;
  }

  /**
   * At shutdown: a lock kept by `releaseAfter` is not waited for. Where the lock is a transaction it is
   * committed now (its connection is about to close); anywhere else it is left to end in the store on its
   * own (ZooKeeper and etcd end it when the strategy closes its session or leases).
   */
  endLinger(): Promise<void> {
    if (this.state !== 'lingering' || !this.linger) return Promise.resolve();
    if (this.deps.strategy.capabilities.transactional) return this.linger.release().then(() => undefined, () => undefined);
    this.linger.timer.cancel();
    this.linger = undefined;
    this.releasing = undefined;
    this.state = 'released';
    this.deps.onFinished(this);
    return Promise.resolve();
  }

  /** True while a `releaseAfter` delay keeps the lock taken. */
  get isLingering(): boolean {
    return this.state === 'lingering';
  }

  /** Resolves once a release (or the clean-up after a loss) that is on its way has ended, however it ended. */
  settled(): Promise<void> {
    return Promise.resolve(this.releasing).then(
      () => undefined,
      () => undefined,
    );
  }

  /**
   * The release on the backend (or the hand-over to the next contender of this process). Its answer is
   * shaped before its promise settles, so that a release costs the bound call's two promises and no more.
   */
  private releaseOnBackend(outcome: ReleaseOutcome, notHeldIsLoss = true): Promise<boolean> {
    const { strategy, operationTimeout, events } = this.deps;
    return boundedCall<boolean | 'session-ended', boolean>({
      clock: this.deps.clock,
      strategy: this.deps.name,
      operation: 'release',
      key: this.lease.key,
      timeoutMs: operationTimeout,
      run: () => this.deps.handOver?.(this.lease, outcome) ?? strategy.release(this.lease, outcome),
      then: (answer) => {
        const wasHeld = answer === true;
        try {
          if (events.listenerCount('released') > 0) events.emit('released', { ...this.describe(), heldMs: Date.now() - this.acquiredAt, wasHeld });
          // After a `releaseAfter` delay the store may rightly have ended the lease first: not a loss.
          if (!wasHeld && outcome !== 'lost' && notHeldIsLoss) this.recordLoss(answer === 'session-ended' ? 'session-ended' : 'not-held-at-release');
          return wasHeld;
        } finally {
          this.deps.onFinished(this);
        }
      },
      catch: (error) => {
        this.deps.onFinished(this);
        // Where the release is the COMMIT of the section's writes, a failure the strategy could not
        // qualify (a timeout, a dropped connection) leaves their fate unknown, and the caller must hear so.
        if (strategy.capabilities.transactional) {
          // A lock that is a transaction ends with its connection: there is nothing to release again.
          if (outcome === 'completed' && !(error instanceof LockCommitFailedError)) throw new LockCommitFailedError(this.lease.key, this.deps.name, 'unknown', { cause: error });
        } else {
          this.deps.releaseFailed?.(strategy, this.lease, outcome, error, Math.max(this.lease.expiresAt, this.renewalSentAt + this.renewalTtlMs));
        }
        throw error;
      },
    });
  }

  /**
   * Push the lease's end to now + `ttlMs` (default: the lease the lock was taken with). Throws
   * `InvalidLockOptionsError` for a ttl that is not a duration of 10 ms to about 24.8 days (checked before
   * the server is asked), and `LockNotHeldError` when the lock is no longer ours.
   */
  async extend(ttlMs?: number): Promise<void> {
    const ttl = ttlMs === undefined ? this.ttl : assertDuration(ttlMs, 'ttl', MIN_TTL_MS);
    if (this.state !== 'held') throw new LockNotHeldError(this.lease.key, this.deps.name, { cause: this.lostError });
    const renewed = await this.renew(ttl);
    // Lost (or released) while the extension was on its way: it extended nothing the caller still holds.
    if (this.state !== 'held') throw new LockNotHeldError(this.lease.key, this.deps.name, { cause: this.lostError });
    if (!renewed) {
      this.markLost('extension-refused');
      throw new LockNotHeldError(this.lease.key, this.deps.name);
    }
    // Extended, but the strategy could not vouch for any time left (a Redlock round slower than the lease).
    if (this.lease.expiresAt <= Date.now()) {
      this.markLost('expired');
      throw new LockNotHeldError(this.lease.key, this.deps.name, { cause: this.lostError });
    }
    this.watchdog.reset();
  }

  /** Declare the lock lost: abort the signal, stop the watchdog, emit `lost`. Idempotent. */
  markLost(reason: LockLostReason, cause?: unknown): void {
    if (this.state !== 'held') return;
    this.state = 'lost';
    this.stopLiveness();
    const { strategy, events } = this.deps;
    this.lostError = new LockLostError(this.lease.key, this.deps.name, reason, { cause });
    this.controller?.abort(this.lostError);
    events.emit('lost', { ...this.describe(), reason, heldMs: Date.now() - this.acquiredAt });
    // The backend may still hold the key (our clock ran ahead, or the lock is a transaction that must be
    // rolled back now); an owner-checked release is harmless where it is already gone. The manager keeps
    // the lock until it is done, so that close() waits for it.
    this.releasing = simpleBoundedCall(this.deps.clock, this.deps.name, 'release', this.lease.key, this.deps.operationTimeout, () => strategy.release(this.lease, 'lost'))
      .catch((error: unknown) => events.emit('backgroundError', { strategy: this.deps.name, key: this.lease.key, operation: 'release', error }))
      .finally(() => this.deps.onFinished(this));
  }

  private async renew(ttlMs: number): Promise<boolean> {
    const { strategy, operationTimeout, events } = this.deps;
    // Never wait on the server past the lease's own end: an answer after it would come too late anyway.
    // In wall time: a stall of this process does not put the bound off past the lease's end, after which the
    // holder must hear that its lock is lost.
    const timeoutMs = Math.max(1, Math.min(operationTimeout, this.lease.expiresAt - Date.now()));
    const { clock, name } = this.deps;
    const lease = this.lease;
    this.renewalSentAt = Date.now();
    this.renewalTtlMs = ttlMs;
    const renewed = await boundedCall<LeaseGrant | null>({ clock, strategy: name, operation: 'extend', key: lease.key, timeoutMs, wallTime: true, run: () => strategy.extend(lease, ttlMs) });
    if (this.state !== 'held') return true;
    if (!renewed) return false;
    this.lease = renewed;
    // Built only for listeners: a watchdog renews every held lock a third into its lease.
    if (events.listenerCount('extended') > 0) events.emit('extended', { ...this.describe(), expiresAt: renewed.expiresAt });
    return true;
  }

  private recordLoss(reason: LockLostReason): void {
    this.lostError = new LockLostError(this.lease.key, this.deps.name, reason);
    this.controller?.abort(this.lostError);
    this.deps.events.emit('lost', { ...this.describe(), reason, heldMs: Date.now() - this.acquiredAt });
  }

  /**
   * Lets the strategy say, with no call to a server, that the lease is gone already (see
   * `LockStrategy.checkLease`): a loss it knows of is reported (markLost, through onLeaseLost) before the
   * holder reads its state.
   */
  private checkLease(): void {
    if (this.state === 'held') this.deps.strategy.checkLease?.(this.lease);
  }

  private stopLiveness(): void {
    this.watchdog.stop();
    this.unsubscribeLost?.();
  }

  private describe(): LockEventBase {
    return { strategy: this.deps.name, key: this.lease.key, owner: this.lease.owner, mode: this.lease.mode, ...permitFields(this.lease) };
  }
}
