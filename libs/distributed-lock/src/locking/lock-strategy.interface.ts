import type { HandOverLimits } from './hand-over-limits';
import type { LeaseGrant, LockRequest, PermitGrant, PermitRequest, WaitBudget } from './lock-lease';
import type { KeyListing, LockInspection, SemaphoreInspection } from './lock-query';

/** What a strategy can guarantee; the lock service and the contract tests read these. */
export interface LockStrategyCapabilities {
  /** Grants carry a fencing token that strictly increases per key across holders. */
  readonly fencing: boolean;
  /** Waiters are served in arrival order (the strategy implements `acquire`). */
  readonly fifo: boolean;
  /** `mode: 'shared'` is supported (read-write lock). */
  readonly sharedLocks: boolean;
  /** Exclusion holds between separate processes (false only for in-process strategies). */
  readonly crossProcess: boolean;
  /**
   * The lock is a transaction and its release with outcome "completed" is the COMMIT of the writes made
   * under it (`PessimisticLockStrategy`). A release that fails then rejects the section with
   * `LockCommitFailedError`. Default false.
   */
  readonly transactional?: boolean;
  /**
   * Counting semaphores (`LockService.acquirePermit`), offered through `LockStrategy.semaphore`. Absent
   * (the default) when the strategy has none: the lock service then refuses permits with
   * `InvalidLockOptionsError` before any server is touched.
   */
  readonly semaphores?: SemaphoreCapabilities;
}

/** What a strategy's semaphores guarantee; the lock service and the contract tests read these. */
export interface SemaphoreCapabilities {
  /** Waiters are served in arrival order, none overtaking another (the semaphore implements `acquire`). */
  readonly fifo: boolean;
  /** Every grant carries a fencing token that strictly increases per semaphore, in the order of the grants. */
  readonly fencing: boolean;
}

/** How a critical section ended; see `LockStrategy.release`. */
export type ReleaseOutcome = 'completed' | 'failed' | 'lost';

/** What `LockStrategy.transfer` did: the next contender's grant, `null` (not held), or 'released' (to the backend). */
export type TransferOutcome = LeaseGrant | null | 'released';

/** Called by a strategy when it learns that a granted lease is gone (session expired, key removed). */
export type LeaseLostListener = (reason: 'session-ended' | 'removed' | 'expired' | 'broken') => void;

/**
 * The primitives a backend implements. The lock service adds everything else: validation, waiting with
 * retry and backoff, timeouts, cancellation, reentrancy, the watchdog, events and multi-key ordering.
 *
 * Every method that reaches a server may be slow or fail; the lock service bounds each call with the
 * configured `operationTimeout` and turns failures into `LockBackendUnavailableError`.
 */
export interface LockStrategy {
  /** A short name for messages and events, e.g. "redis". */
  readonly name: string;
  readonly capabilities: LockStrategyCapabilities;

  /**
   * Optional: true when `acquire` calls `budget.serverAnswered()` once the server answered (see
   * `WaitBudget.serverAnswered`); the lock service then fails a wait on a silent server after
   * `operationTimeout` instead of after the whole wait. Default false.
   */
  readonly signalsServerAnswer?: boolean;

  /** Take the lock if it is free, without waiting. Resolves `null` when it is held by another owner. */
  tryAcquire(request: LockRequest): Promise<LeaseGrant | null>;

  /**
   * Optional: wait in the backend's own queue (FIFO strategies). Resolves the grant, or `null` when
   * `budget.timeoutMs` passes. On `budget.signal` abort it must leave the queue and reject or resolve `null`.
   */
  acquire?(request: LockRequest, budget: WaitBudget): Promise<LeaseGrant | null>;

  /**
   * Optional: resolve as soon as the key may have become free (a release notification, a watch), or when
   * the budget ends. Polling strategies leave it out and are retried with backoff instead.
   */
  waitForRelease?(key: string, budget: WaitBudget): Promise<void>;

  /**
   * Optional: hand the exclusive lock `lease` holds straight to `next`, another acquisition through the same
   * lock service, in one server call. Owner-checked like `release`; `next` gets a fencing token of its own and
   * its own lease. Resolves `next`'s grant; `null` when `lease` no longer holds the lock (then nothing is
   * handed on); or 'released' when the strategy let the lock go to its backend instead (a waiter of another
   * process came first), as `release` would. With it, the lock service keeps the contenders of a key in one
   * line per process: only the first asks the backend (polls it, or waits in its queue with `acquire`), and a
   * release passes the lock to the next one, within `handOverLimits`.
   */
  transfer?(lease: LeaseGrant, next: LockRequest): Promise<TransferOutcome>;

  /** With `transfer`: how far the lock may be passed within the process before it goes back to the backend. */
  readonly handOverLimits?: HandOverLimits;

  /**
   * Optional, for strategies that poll (no `acquire`): a place in the backend's queue of waiters, so that
   * the waiter that came first is served first. The lock service calls it once a wait's first try was
   * refused; from then on `tryAcquire(request)` takes the lock only when no live place of another waiter is
   * older. `pollGapMs` is the longest pause between two of the waiter's tries: a place not renewed by a try
   * for a while after it (the waiter died) no longer holds anybody back. Resolves once the place is taken.
   */
  joinQueue?(request: LockRequest, pollGapMs: number): Promise<void>;

  /** With `joinQueue`: how long to pause before the next try of a queued `request` (its last try was refused), in ms; undefined for the lock service's backoff. */
  nextTryIn?(request: LockRequest): number | undefined;

  /**
   * With `joinQueue`: the wait of `request` ended (granted, timed out, aborted, closed); its place, if it
   * still has one, goes. Never rejects: a place it fails to remove ends with its lease.
   */
  leaveQueue?(request: LockRequest): Promise<void>;

  /** Push the lease's end to `now + ttlMs`. Resolves the renewed grant, or `null` when this owner no longer holds it. */
  extend(lease: LeaseGrant, ttlMs: number): Promise<LeaseGrant | null>;

  /**
   * Release if this owner still holds it. Resolves `false` when it was not held (already expired or taken
   * over), or `'session-ended'` when the lock lived on a database session that the release found ended: a
   * statement of the section failed as the session was ended, before the client saw its connection close.
   * The lock service reports either as the holder's loss (`not-held-at-release`, `session-ended`), except
   * for a release of a lock already known lost, or one kept by `releaseAfter` whose lease the store may
   * rightly have ended first. `outcome` says how the critical section ended, for strategies whose
   * lock is a transaction: "completed" commits, "failed" (the section threw) and "lost" (the lease ran
   * out) roll back.
   */
  release(lease: LeaseGrant, outcome?: ReleaseOutcome): Promise<boolean | 'session-ended'>;

  /**
   * Optional: what the backend says of `key` right now, for `LockService.query`: its holders and, where the
   * backend keeps one, its queue of waiters in the order it serves them. Reads only; never waits for a lock.
   */
  inspect?(key: string): Promise<LockInspection>;

  /**
   * Optional, with `inspect`: the keys beginning with `prefix` that someone holds or waits for now, a page at
   * a time (`LockService.queryPrefix`): at most about `limit` of them, from the opaque `cursor` the previous
   * page gave (none: the first page). Bounded work on the server per page, never a scan of everything at once
   * (no Redis `KEYS`); a key may appear on two pages when the backend's order moves under the listing.
   */
  listKeys?(prefix: string, page: { readonly cursor?: string; readonly limit: number }): Promise<KeyListing>;

  /**
   * Optional, with `inspect`: end every hold of `key` as an operator would (`LockService.breakLock`), and let
   * the backend's next waiter in as a release does. Holders the strategy can tell at once are told through
   * `onLeaseLost` with "broken"; the others find out at their next extension or release. Resolves the holds
   * it ended. The next grant's fencing token must be higher than theirs. `signal` aborts when the call's bound
   * ran out and its caller was told it failed: a break that takes several steps starts none after that.
   */
  breakLock?(key: string, signal?: AbortSignal): Promise<LockInspection['holders']>;

  /**
   * Optional: reject a key this backend cannot store (too long for a column, characters a path cannot
   * hold) with `InvalidLockKeyError`, before any server is touched.
   */
  validateKey?(key: string): void;

  /** Optional: report a loss the backend pushes (session expiry, key deletion). Returns an unsubscribe function. */
  onLeaseLost?(lease: LeaseGrant, listener: LeaseLostListener): () => void;

  /**
   * Optional, with `onLeaseLost`: a synchronous look, with no call to a server, at whether the strategy
   * already knows the lease is gone (ZooKeeper: a session the server may have expired while the process
   * was frozen). If so it tells the `onLeaseLost` listeners before returning. The lock service calls it
   * whenever the holder reads `isHeld`, `signal` or `throwIfLost()`, so that a process waking from a freeze
   * reads its loss at its first look, before any timer had the chance to run. Must be cheap.
   */
  checkLease?(lease: LeaseGrant): void;

  /** Optional: a cheap round trip for health checks. */
  ping?(): Promise<void>;

  /**
   * Optional: does now what the first acquisition would otherwise do first (initialise the pool, read the
   * server's version, make missing tables), so that the first acquisition costs what the next ones do.
   * Called at bootstrap for the strategies of `@ScheduledLock` jobs, before the scheduler's first fire
   * (a fire slowed down by it may take the job's lock after another instance's `lockAtLeastFor` ended,
   * and run that fire again). Where it is absent, `ping` is used. Idempotent; a failure is reported, not fatal.
   */
  warmUp?(): Promise<void>;

  /**
   * Optional: the primitives of counting semaphores, declared by `capabilities.semaphores`. The strategy's
   * `close()` also ends them; the lock service releases every permit before it closes the strategy.
   */
  readonly semaphore?: SemaphoreStrategy;

  /**
   * Free what the strategy created (connections, timers). Clients passed in by the user are left open.
   * `giveUp` aborts once the lock service stops waiting for this close (its operation timeout passed, or
   * the close failed): a server that does not answer would keep a graceful close, and with it the
   * process, alive. Then drop whatever is still open (destroy its sockets) without the server's answer.
   * A strategy whose close never waits for a server may ignore it.
   */
  close(giveUp?: AbortSignal): Promise<void>;
}

/**
 * The primitives of a counting semaphore on a backend: the same shape as a lock's, for permits. The lock
 * service adds validation, waiting, timeouts, cancellation, the watchdog, events and lost-permit signals.
 *
 * Rules: a grant never makes the weights held exceed `permits`; release and extend are owner-checked; a
 * permit's lease expires on its own; a request whose `permits` differs from the semaphore's while anyone
 * holds or waits for it is refused with `PermitsMismatchError`.
 */
export interface SemaphoreStrategy {
  /** Take `weight` places if they are free now (and, for a FIFO semaphore, nobody waits). Resolves `null` otherwise. */
  tryAcquire(request: PermitRequest): Promise<PermitGrant | null>;

  /**
   * Optional: wait in the backend's own queue (FIFO semaphores). Resolves the grant, or `null` when
   * `budget.timeoutMs` passes; on abort it leaves the queue and rejects or resolves `null`.
   */
  acquire?(request: PermitRequest, budget: WaitBudget): Promise<PermitGrant | null>;

  /** Optional: resolve as soon as a place may have become free, or when the budget ends. Without it the lock service polls. */
  waitForRelease?(key: string, budget: WaitBudget): Promise<void>;

  /** Push the permit's end to `now + ttlMs`. Resolves the renewed grant, or `null` when this owner no longer holds it. */
  extend(lease: PermitGrant, ttlMs: number): Promise<PermitGrant | null>;

  /** Give the permit back if this owner still holds it. Resolves `false` when it was not held (expired, removed). */
  release(lease: PermitGrant): Promise<boolean>;

  /**
   * Optional: what the backend says of semaphore `key` right now, for `LockService.queryPermits`: its size,
   * its holders and, where the backend keeps one, its queue of waiters in the order it serves them. Reads
   * only; never waits.
   */
  inspect?(key: string): Promise<SemaphoreInspection>;

  /** Optional: report a loss the backend pushes (session expiry, removal). Returns an unsubscribe function. */
  onLeaseLost?(lease: PermitGrant, listener: LeaseLostListener): () => void;

  /** Optional, with `onLeaseLost`: see `LockStrategy.checkLease`. */
  checkLease?(lease: PermitGrant): void;

  /** Optional: true when `acquire` calls `budget.serverAnswered()` (see `LockStrategy.signalsServerAnswer`). */
  readonly signalsServerAnswer?: boolean;
}
