import type { HandOverLimits } from './hand-over-limits';
import type { LeaseGrant, LockRequest, WaitBudget } from './lock-lease';

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
}

/** How a critical section ended; see `LockStrategy.release`. */
export type ReleaseOutcome = 'completed' | 'failed' | 'lost';

/** Called by a strategy when it learns that a granted lease is gone (session expired, key removed). */
export type LeaseLostListener = (reason: 'session-ended' | 'removed' | 'expired') => void;

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
   * Optional, for strategies that poll (no `acquire`): hand the exclusive lock `lease` holds straight to
   * `next`, another acquisition through the same lock service, in one server call. Owner-checked like
   * `release`; `next` gets a fencing token of its own and its own lease. Resolves `next`'s grant, or `null`
   * when `lease` no longer holds the lock (then nothing is handed on). With it, the lock service keeps the
   * contenders of a key in one line per process: only the first polls the backend, and a release passes
   * the lock to the next one without its waiting for a poll, within `handOverLimits`.
   */
  transfer?(lease: LeaseGrant, next: LockRequest): Promise<LeaseGrant | null>;

  /** With `transfer`: how far the lock may be passed within the process before it goes back to the backend. */
  readonly handOverLimits?: HandOverLimits;

  /** Push the lease's end to `now + ttlMs`. Resolves the renewed grant, or `null` when this owner no longer holds it. */
  extend(lease: LeaseGrant, ttlMs: number): Promise<LeaseGrant | null>;

  /**
   * Release if this owner still holds it. Resolves `false` when it was not held (already expired or taken
   * over). `outcome` says how the critical section ended, for strategies whose lock is a transaction:
   * "completed" commits, "failed" (the section threw) and "lost" (the lease ran out) roll back.
   */
  release(lease: LeaseGrant, outcome?: ReleaseOutcome): Promise<boolean>;

  /**
   * Optional: reject a key this backend cannot store (too long for a column, characters a path cannot
   * hold) with `InvalidLockKeyError`, before any server is touched.
   */
  validateKey?(key: string): void;

  /** Optional: report a loss the backend pushes (session expiry, key deletion). Returns an unsubscribe function. */
  onLeaseLost?(lease: LeaseGrant, listener: LeaseLostListener): () => void;

  /** Optional: a cheap round trip for health checks. */
  ping?(): Promise<void>;

  /** Free what the strategy created (connections, timers). Clients passed in by the user are left open. */
  close(): Promise<void>;
}
