import type { WaitBudget } from './lock-lease';

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

  constructor(
    readonly timeoutMs: number,
    private readonly callerSignal: AbortSignal | undefined,
  ) {
    this.givenUp = callerSignal?.aborted ?? false;
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
