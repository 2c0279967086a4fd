import type { LockEvents } from './lock-events';
import type { LeaseGrant, LockMode } from './lock-lease';

/** How an acquisition ended: with the lock, or why without it. */
export type AcquisitionOutcome =
  /** The lock was granted. */
  | 'acquired'
  /** The wait ran out (`LockAcquireTimeoutError`, or `tryAcquire` finding the lock held). */
  | 'timeout'
  /** The caller's signal aborted the wait (`LockAcquireAbortedError`). */
  | 'aborted'
  /** Anything else: the backend failed or could not be reached, the lock service was closed, a bad option. */
  | 'error';

/** The lock manager as an observer sees it: its names, its events and what it is doing now. */
export interface ObservedLockManager {
  /** The strategy's name in errors and events (in a Nest module, the name it is registered under). */
  readonly name: string;
  /** The strategy's own name, i.e. its kind: "redis", "database", … */
  readonly backendName: string;
  /** Lifecycle events: extensions, losses and background errors reach observers through them. */
  readonly events: LockEvents;
  /** Acquisitions waiting now. */
  readonly waitingCount: number;
  /** Grants held now. */
  readonly heldCount: number;
}

/** One acquisition of a lock or a permit (never a re-entry, which waits for nothing and asks no backend). */
export interface ObservedAcquisition {
  /** The key, prefix included. It may carry user data: observers decide whether to show it. */
  readonly key: string;
  readonly mode: LockMode;
  /** True for `tryAcquire`: a lock found held is then an answer, not a failure. */
  readonly tryOnly: boolean;
  /** Set for a semaphore's permit (`acquirePermit`): the semaphore's size and the places it takes. */
  readonly permit?: { readonly permits: number; readonly weight: number };
  /**
   * When the acquisition started, as `performance.now()` (ms). The backend has been asked already when
   * the observer hears of it, so that what the observer does overlaps the backend's answer.
   */
  readonly startedAt: number;
}

/** What an observer keeps of one acquisition while it waits. */
export interface AcquisitionObservation {
  /**
   * The acquisition ended. `waitedMs` is the whole wait, in ms (fractional); `grant` is set when `outcome` is
   * "acquired"; `error` is what the caller receives (undefined when it receives a lock, or `null` from
   * `tryAcquire`). Returns what observes the hold, if anything.
   */
  waitEnded(outcome: AcquisitionOutcome, waitedMs: number, grant: LeaseGrant | undefined, error: unknown): HoldObservation | undefined;
}

/** What an observer keeps of one held lock, from its grant to its end. */
export interface HoldObservation {
  /**
   * Runs `fn` (a `withLock` / `@Locked` section) as part of the hold, e.g. with the hold's span as the active
   * one so that what the section does nests under it. Returns what `fn` returns.
   */
  run?<T>(fn: () => T): T;
  /** The lock ended: released (also after a `releaseAfter` delay) or lost. `heldMs` in ms since the grant. */
  holdEnded(heldMs: number): void;
}

/**
 * Watches a lock manager's acquisitions and holds, for traces and metrics (see `OpenTelemetryLockObserver`).
 * Given as `LockManagerOptions.observer`. Every method is called synchronously, in the async context of the
 * caller where there is one (so an observer may read the caller's active span); none may throw.
 * Extensions, losses and background errors are read from `manager.events`.
 */
export interface LockObserver {
  /** The manager starts using this observer (in its constructor). */
  attach(manager: ObservedLockManager): void;
  /** The manager was closed: stop observing it. */
  detach(manager: ObservedLockManager): void;
  /** An acquisition starts waiting; undefined to leave it unobserved. */
  acquisitionStarted(manager: ObservedLockManager, acquisition: ObservedAcquisition): AcquisitionObservation | undefined;
}
