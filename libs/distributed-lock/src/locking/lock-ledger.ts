import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import { DeadlineClock } from './deadline-clock';
import { BackgroundWork, type EngineContext } from './engine-context';
import { HeldLock } from './held-lock';
import type { LockEvents } from './lock-events';
import type { LeaseGrant } from './lock-lease';
import type { HoldObservation, LockObserver, ObservedLockManager } from './lock-observer';
import type { ResolvedAcquireOptions } from './lock-options';
import type { LockStrategy } from './lock-strategy.interface';
import type { OwnerIds } from './owner-id';
import { ReleaseRetries } from './release-retries';
import { ServerAnswers } from './server-answers';
import type { CallerBudget } from './wait-budget';
import { simpleBoundedCall } from './waits/bounded-call';
import { ProcessLines } from './waits/line-wait';

/**
 * The lock manager's books: the grants held through it, the waits under way, the work that goes on in the
 * background, the observer's view of each hold, and this process's lines of contenders; and the order in
 * which `close()` ends them. The waits and held locks reach the manager's clock, name and events through it
 * (it is their `EngineContext`).
 */
export class LockLedger implements EngineContext {
  readonly clock = new DeadlineClock();
  readonly background = new BackgroundWork();
  readonly answers = new ServerAnswers();
  readonly held = new Set<HeldLock>();
  /** Waits under way, so that close() can end them. */
  readonly waiting = new Set<CallerBudget>();
  /** The observer's view of each held lock, when there is an observer. */
  readonly observedHolds = new Map<HeldLock, HoldObservation>();
  readonly lines: ProcessLines | undefined;
  /** Releases that could not reach the backend, tried again until the lease would end first. */
  private readonly releaseRetries = new ReleaseRetries(this);
  private isClosed = false;
  private closing: Promise<void> = Promise.resolve();

  constructor(
    readonly strategy: LockStrategy,
    readonly name: string,
    readonly operationTimeout: number,
    readonly events: LockEvents,
    readonly owners: OwnerIds,
    private readonly observer: LockObserver | undefined,
    private readonly observed: ObservedLockManager,
  ) {
    this.lines = strategy.transfer ? new ProcessLines(this, strategy) : undefined;
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /** Holds a grant of `ops`: its watchdog, its lost signal, and this ledger's record of it. */
  hold(ops: LockStrategy, grant: LeaseGrant, options: ResolvedAcquireOptions): HeldLock {
    const lines = ops === this.strategy && grant.mode === 'exclusive' ? this.lines : undefined;
    lines?.granted(grant);
    const held = new HeldLock(
      {
        strategy: ops,
        clock: this.clock,
        name: this.name,
        operationTimeout: this.operationTimeout,
        events: this.events,
        onFinished: (lock) => this.finished(lock),
        releaseFailed: this.releaseRetries.afterFailure,
        handOver: lines ? (lease, outcome) => lines.handOver(lease, outcome) : undefined,
      },
      grant,
      options.ttl,
      options.autoExtend,
    );
    this.held.add(held);
    return held;
  }

  /** A grant that arrived after the caller gave up: given back so it does not block others until expiry. */
  releaseOrphan(grant: LeaseGrant | null, ops: LockStrategy): Promise<void> {
    if (!grant) return Promise.resolve();
    this.lines?.holderGone(grant.key, grant.owner);
    this.background.enter();
    return simpleBoundedCall(this.clock, this.name, 'release', grant.key, this.operationTimeout, () => ops.release(grant)).then(
      () => this.background.exit(),
      (error: unknown) => {
        this.background.exit();
        this.events.emit('backgroundError', { strategy: this.name, key: grant.key, operation: 'release', error });
      },
    );
  }

  /** A held lock was released or lost: forgotten here, and its key's line moves on. */
  private finished(lock: HeldLock): void {
    this.held.delete(lock);
    this.lines?.holderGone(lock.grant.key, lock.grant.owner);
    const observed = this.observedHolds.get(lock);
    if (observed) {
      this.observedHolds.delete(lock);
      observed.holdEnded(Date.now() - lock.acquiredAt);
    }
  }

  /**
   * Ends every wait at once (the waiters reject with `LockBackendUnavailableError`, leaving the backend's
   * queue), lets releases already on their way finish, releases every held lock (hold counts ignored),
   * then closes the strategy. Idempotent.
   */
  close(): Promise<void> {
    if (this.isClosed) return this.closing;
    this.isClosed = true;
    this.closing = this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    this.releaseRetries.stop();
    const waiting = [...this.waiting];
    for (const budget of waiting) budget.giveUp();
    // Waiters leave the backend's queue before the strategy closes its connections, so that nobody is
    // handed a lock by a waiter that is gone; bounded, since a server that stopped answering may keep a
    // wait in a call that never returns.
    await this.atMost(this.operationTimeout, Promise.all(waiting.map((budget) => budget.settled)));
    // A lock still held is taken from its holder, who is told (its signal aborts with LockLostError
    // 'closed', withLock rejects): a section still running must not go on as if it held the lock, nor
    // commit half its work where the lock is a transaction (a lost lock is rolled back).
    // Locks kept past their section by `releaseAfter` are left to end in the store (committed now where
    // the lock is a transaction): their holders are done with them, and waiting out the delay would hold
    // the shutdown up.
    await Promise.all([...this.held].map((lock) => lock.endLinger()));
    for (const lock of [...this.held]) if (lock.isHeld) lock.markLost('closed');
    await Promise.all([...this.held].map((lock) => lock.settled()));
    await this.atMost(this.operationTimeout, this.background.drained());
    this.observer?.detach(this.observed);
    // Made once per close, never on the hot path.
    const giveUp = new AbortController();
    try {
      await simpleBoundedCall(this.clock, this.name, 'close', undefined, this.operationTimeout, () => this.strategy.close(giveUp.signal));
    } catch (error) {
      // The close is past its bound, or failed: the strategy drops what is still open, or the process stays
      // alive. The bounded call's error already names the close, its time and its cause.
      giveUp.abort(error);
      throw error instanceof LockBackendUnavailableError ? error : new LockBackendUnavailableError(this.name, 'close', 0, { cause: error });
    } finally {
      this.clock.stop();
    }
  }

  /** Waits for `work`, but no longer than `ms`: close() must end however the backend behaves. */
  private atMost(ms: number, work: Promise<unknown>): Promise<void> {
    return new Promise((resolve) => {
      const bound = this.clock.after(ms, resolve, true);
      work.then(
        () => {
          bound.cancel();
          resolve();
        },
        () => {
          bound.cancel();
          resolve();
        },
      );
    });
  }
}
