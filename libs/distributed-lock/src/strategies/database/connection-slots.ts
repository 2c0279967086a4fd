import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import type { WaitBudget } from '../../locking/lock-lease';
import { describe } from '../../locking/lock-options';
import { onBudgetAbort } from '../../locking/wait-for-wake';

/** Validates `maxHeldConnections` (default 8): a whole number ≥ 1. */
export function assertMaxHeldConnections(value: unknown): number {
  const max = value ?? 8;
  if (!Number.isInteger(max) || (max as number) < 1) throw new InvalidLockOptionsError('maxHeldConnections', `expected a whole number ≥ 1, got ${describe(max)}.`);
  return max as number;
}

/**
 * The connections that locks pin (the pessimistic lock's transaction, an advisory lock's session): at most
 * `max` held and pending acquisitions use one at once; the others wait here, in arrival order, without
 * touching the pool, so that locks never exhaust the pool the application also needs.
 */
export class ConnectionSlots {
  private used = 0;
  private readonly queue: Array<{ enter(): void; giveUp(): void }> = [];

  constructor(readonly max: number) {}

  /**
   * A slot, at once or after waiting in line until `deadline` (ms since the epoch) or the budget's abort.
   * Resolves false when none came; without a budget (tryAcquire) it never waits.
   */
  take(budget: WaitBudget | undefined, deadline: number): Promise<boolean> {
    if (this.used < this.max) {
      this.used += 1;
      return Promise.resolve(true);
    }
    if (!budget) return Promise.resolve(false);
    // Waiting for a connection of this process (held by other locks here) is a wait, not a silent server.
    budget.serverAnswered?.();
    return new Promise((resolve) => {
      const entry = {
        enter: (): void => {
          clearTimeout(timer);
          stopWatchingAbort();
          this.used += 1;
          resolve(true);
        },
        giveUp: (): void => {
          const index = this.queue.indexOf(entry);
          if (index >= 0) this.queue.splice(index, 1);
          clearTimeout(timer);
          stopWatchingAbort();
          resolve(false);
        },
      };
      const timer = setTimeout(entry.giveUp, Math.max(0, deadline - Date.now()));
      const stopWatchingAbort = onBudgetAbort(budget, entry.giveUp);
      this.queue.push(entry);
    });
  }

  /** Gives a slot back (the lock was released, or the acquisition did not get it): the next in line enters. */
  give(): void {
    this.used -= 1;
    while (this.queue.length > 0 && this.used < this.max) this.queue.shift()?.enter();
  }

  /** Ends every wait for a slot at once (the strategy closes). */
  giveUpAll(): void {
    for (const entry of this.queue.splice(0)) entry.giveUp();
  }
}
