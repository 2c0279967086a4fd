import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import type { WaitBudget } from '../../locking/lock-lease';
import { describe } from '../../locking/lock-options';
import { onBudgetAbort } from '../../locking/wait-for-wake';

/** `maxHeldConnections` when it is not given, on a pool of more than 8 connections. */
export const DEFAULT_MAX_HELD_CONNECTIONS = 8;

/**
 * How many connections locks may pin (`maxHeldConnections`), checked against the pool they come from
 * (`poolSize`, undefined when unknown). Every held lock and every acquisition in progress pins one; the
 * cancel of a wait at its deadline, a pessimistic lock's fencing token and the application's own queries
 * need one that is not pinned, or they wait for good behind locks that wait for them. So:
 * - given: a whole number ≥ 1 below the pool size, else `InvalidLockOptionsError` naming both numbers and
 *   the fix (the user asked for what the pool cannot give: say so, rather than quietly give less);
 * - not given: 8, lowered to one below the pool size on a smaller pool (the default was never chosen for
 *   that pool; a pool of 2 allows 1).
 * A pool of one connection leaves none for anything but the lock, and is refused.
 */
export function maxHeldConnectionsFor(given: unknown, poolSize: number | undefined): number {
  const value = given ?? undefined;
  if (value !== undefined && (!Number.isInteger(value) || (value as number) < 1)) {
    throw new InvalidLockOptionsError('maxHeldConnections', `expected a whole number ≥ 1, got ${describe(value)}.`);
  }
  if (poolSize !== undefined && poolSize < 2) {
    throw new InvalidLockOptionsError(
      'dataSource',
      `its pool has ${poolSize} connection, and a lock pins one for as long as it is held: none would be left to cancel a wait, draw a fencing token or run your queries. Give the pool at least 2 connections (poolSize).`,
    );
  }
  if (value === undefined) return poolSize === undefined ? DEFAULT_MAX_HELD_CONNECTIONS : Math.min(DEFAULT_MAX_HELD_CONNECTIONS, poolSize - 1);
  const max = value as number;
  if (poolSize !== undefined && max >= poolSize) {
    throw new InvalidLockOptionsError(
      'maxHeldConnections',
      `${max} is not below the pool size of ${poolSize} connections. Each held lock pins a connection of the pool, and the cancel of a wait, ` +
        `a fencing token and your application's queries need one more: with all ${poolSize} pinned they would wait for good. ` +
        `Set maxHeldConnections to at most ${poolSize - 1}, or raise the pool's size (poolSize) above ${max}.`,
    );
  }
  return max;
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

  /** A slot can be taken at once. */
  get hasFree(): boolean {
    return this.used < this.max;
  }

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
