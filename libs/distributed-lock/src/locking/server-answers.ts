/**
 * When the strategy's server last answered any wait of one lock manager. A wait whose own first answer is
 * slow (queued behind a burst of other waits on the same connection) is not facing a silent server when
 * another wait heard from it since this one began: at its deadline it is a plain timeout, and it need not
 * wait for its own answer to tell the two apart.
 */
export class ServerAnswers {
  private lastAt = Number.NEGATIVE_INFINITY;
  private next: Array<() => void> | undefined;

  /** The server answered a wait (see `WaitBudget.serverAnswered`). */
  heard(): void {
    this.lastAt = performance.now();
    const next = this.next;
    if (!next) return;
    this.next = undefined;
    for (const listener of next) listener();
  }

  /** True when the server answered some wait at or after `since` (a `performance.now()` reading). */
  heardSince(since: number): boolean {
    return this.lastAt >= since;
  }

  /** Calls `listener` once, at the next answer to any wait. */
  onNext(listener: () => void): void {
    (this.next ??= []).push(listener);
  }
}
