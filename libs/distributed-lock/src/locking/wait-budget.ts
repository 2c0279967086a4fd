import type { WaitBudget } from './lock-lease';
import type { ServerAnswers } from './server-answers';

/**
 * The wait budget the lock manager hands a queueing strategy: given up when the caller's signal aborts
 * or when the manager gives up on the strategy (a hang past the bound), so that the strategy leaves its
 * queue. One per waiting acquisition, so it is cheap to make: a class (no per-object getters), no
 * `AbortSignal` unless a strategy reads `signal`, no listener set until one is added.
 */
export class CallerBudget implements WaitBudget {
  private givenUp: boolean;
  private listeners: Set<() => void> | undefined;
  private leave: AbortController | undefined;
  private combined: AbortSignal | undefined;
  private finished = false;
  private whenFinished: Promise<void> | undefined;
  private done: (() => void) | undefined;

  /** When the wait ends (`Date.now()` ms). */
  private readonly until: number;

  constructor(
    timeoutMs: number,
    private readonly callerSignal: AbortSignal | undefined,
    /** The manager's record of answers to any of its waits, told of each answer to this one. */
    private readonly answers?: ServerAnswers,
  ) {
    this.until = Date.now() + timeoutMs;
    this.givenUp = callerSignal?.aborted ?? false;
  }

  /**
   * The time left (ms, at least 1), read when a strategy or the queue wait starts waiting: a contender that
   * waited behind another of its instance before its turn came has only what is left of its wait (it was
   * given its whole `waitTimeout` again, and ended up to twice as late).
   */
  get timeoutMs(): number {
    return Math.max(1, this.until - Date.now());
  }

  /**
   * Resolves once the wait is over (see `finish`): close() waits for it before closing the strategy. Made
   * only when asked: most waits end without anyone asking.
   */
  get settled(): Promise<void> {
    if (this.finished) return Promise.resolve();
    this.whenFinished ??= new Promise((resolve) => (this.done = resolve));
    return this.whenFinished;
  }

  private answered = false;
  private answerListeners: Array<() => void> | undefined;

  /** True once the strategy heard from the server (see `serverAnswered`). */
  get hasAnswer(): boolean {
    return this.answered;
  }

  /** The strategy heard from the server (see `WaitBudget.serverAnswered`). */
  serverAnswered(): void {
    this.answers?.heard();
    if (this.answered) return;
    this.answered = true;
    const listeners = this.answerListeners;
    this.answerListeners = undefined;
    for (const listener of listeners ?? []) listener();
  }

  /** Calls `listener` once the server answered (at once if it has). */
  onFirstAnswer(listener: () => void): void {
    if (this.answered) return listener();
    (this.answerListeners ??= []).push(listener);
  }

  private localReason: (() => Error | undefined) | undefined;

  /** See `WaitBudget.heldBackLocally`. */
  heldBackLocally(reason: (() => Error | undefined) | undefined): void {
    this.localReason = reason;
  }

  /** The error a wait that ends now should give instead of a timeout, if this process held it back. */
  heldBackBy(): Error | undefined {
    return this.localReason?.();
  }

  /** True when the caller's own signal aborted (not the manager giving up). */
  get callerAborted(): boolean {
    return this.callerSignal?.aborted ?? false;
  }

  /** The wait is over, whatever its outcome (the strategy left any queue it joined). */
  finish(): void {
    this.finished = true;
    this.done?.();
    this.done = undefined;
  }

  get signal(): AbortSignal {
    if (!this.leave) {
      this.leave = new AbortController();
      if (this.givenUp) this.leave.abort();
    }
    this.combined ??= this.callerSignal ? AbortSignal.any([this.callerSignal, this.leave.signal]) : this.leave.signal;
    return this.combined;
  }

  get aborted(): boolean {
    return this.givenUp;
  }

  onAbort(listener: () => void): () => void {
    (this.listeners ??= new Set()).add(listener);
    return () => this.listeners?.delete(listener);
  }

  /** Gives up (idempotent): the signal aborts and every listener is called once. */
  giveUp(): void {
    if (this.givenUp) return;
    this.givenUp = true;
    this.leave?.abort();
    for (const listener of [...(this.listeners ?? [])]) listener();
  }
}
