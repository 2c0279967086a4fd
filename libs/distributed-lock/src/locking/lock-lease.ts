/** `exclusive`: one holder. `shared`: any number of shared holders and no exclusive one (read-write lock). */
export type LockMode = 'exclusive' | 'shared';

/** What a strategy is asked to take: one key, for one owner, for a lease of `ttlMs`. */
export interface LockRequest {
  /** The full key (prefix included), already validated. */
  readonly key: string;
  /** Unique id of this acquisition; release and extend only act when the stored owner equals it. */
  readonly owner: string;
  /** Lease length in ms; the backend frees the lock by itself once it passes without extension. */
  readonly ttlMs: number;
  readonly mode: LockMode;
}

/**
 * What a strategy returns for a lock it granted: the key, the owner, the fencing token and when the lease
 * ends. Strategies may return a subclass carrying backend state (a session, a node path). One lock goes by
 * three nouns: the strategy's `LeaseGrant`; the lock service's `HeldLock`, its internal state of one grant;
 * and the `LockHandle` that users hold (see docs/writing-a-strategy.md, "One lock, three nouns").
 */
export interface LeaseGrant {
  readonly key: string;
  readonly owner: string;
  readonly mode: LockMode;
  /**
   * Strictly increasing per key across holders, when the strategy declares `fencing`. Pass it to the
   * resource you protect and reject writes that carry a lower token than the last one seen.
   */
  readonly fencingToken?: number;
  /** Local clock (ms since epoch) after which the lease must be assumed gone. */
  readonly expiresAt: number;
}

/** How long and under which signal a strategy may wait. */
export interface WaitBudget {
  /** Aborted when the caller gives up; the strategy must then leave any queue it joined. */
  readonly signal: AbortSignal;
  /** Remaining time in ms (> 0). */
  readonly timeoutMs: number;
  /**
   * Optional, cheaper views of `signal` for hot paths: making and watching an `AbortSignal` for every
   * waiting acquisition showed in CPU profiles under heavy contention. Given by the lock service; use them through `budgetAborted` / `onBudgetAbort`, which fall back to `signal`.
   */
  readonly aborted?: boolean;
  onAbort?(listener: () => void): () => void;
  /**
   * Optional: a strategy that declares `signalsServerAnswer` calls it once the server has answered the
   * wait's first request (or the wait is legitimately behind a holder of this process). Until then the
   * lock service bounds the wait by `operationTimeout`, so a server that accepts connections but never
   * answers fails after that bound, not after the whole `waitTimeout`.
   */
  serverAnswered?(): void;
  /**
   * Optional: a strategy whose wait is held back in this process (all the connections it may pin are in
   * use), not by the lock's holder, gives the error its caller should get if the wait ends there, and
   * `undefined` once it is past that. The lock service gives that error at the deadline instead of a timeout
   * (a timeout would say the lock is held by another owner). `reason` may return undefined: then it is a
   * timeout after all.
   */
  heldBackLocally?(reason: (() => Error | undefined) | undefined): void;
}

/**
 * What a strategy is asked to take for a semaphore: `weight` of the `permits` places of the semaphore `key`,
 * for one owner and a lease of `ttlMs`. `mode` is always "shared" (a permit is one of several holds at once).
 */
export interface PermitRequest extends LockRequest {
  /** The semaphore's size: how many places it has. Part of its identity: every caller must give the same. */
  readonly permits: number;
  /** How many of those places this acquisition takes (1 to `permits`). */
  readonly weight: number;
}

/** A permit a strategy granted: `weight` places of a semaphore of `permits`, with its own lease. */
export interface PermitGrant extends LeaseGrant {
  readonly permits: number;
  readonly weight: number;
}
