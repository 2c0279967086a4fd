import type { WaitBudget } from '../../locking/lock-lease';
import { budgetAborted, onBudgetAbort } from '../../locking/wait-for-wake';

/** A waiter in an in-process queue (a lock's, a semaphore's). */
export interface MemoryWaiter<R, G> {
  readonly request: R;
  /** Hands the waiter its grant: the wait resolves with it. */
  readonly grant: (lease: G) => void;
  /** Leave the queue without a grant. */
  readonly cancel: () => void;
}

/**
 * Puts `request` at the end of `queue` and waits until the queue's owner grants it (`waiter.grant`), the
 * budget ends or is aborted, or it is cancelled: then it leaves the queue, resolves null, and calls
 * `onLeft` (the head may have held back waiters behind it).
 */
export function waitInMemoryQueue<R, G>(queue: Array<MemoryWaiter<R, G>>, request: R, budget: WaitBudget, onLeft: () => void): Promise<G | null> {
  return new Promise<G | null>((resolve) => {
    const leave = (): void => {
      clearTimeout(timer);
      stopWatchingAbort();
      const index = queue.indexOf(waiter);
      if (index < 0) return;
      queue.splice(index, 1);
      resolve(null);
      onLeft();
    };
    const waiter: MemoryWaiter<R, G> = {
      request,
      grant: (lease) => {
        clearTimeout(timer);
        stopWatchingAbort();
        resolve(lease);
      },
      cancel: leave,
    };
    // Not unref'd: the caller awaits this wait, and nothing else may keep the process alive.
    const timer = setTimeout(leave, budget.timeoutMs);
    const stopWatchingAbort = onBudgetAbort(budget, leave);
    queue.push(waiter);
    if (budgetAborted(budget)) leave();
  });
}

/** A lease kept by an in-process strategy. */
export interface MemoryLease {
  expiresAt: number;
  timer: NodeJS.Timeout | undefined;
}

/**
 * Calls `onEnd` once the lease's end has passed, unless `stillHeld` says it is gone by then. Timers can fire
 * a millisecond before the wall clock reaches the end: the rest is waited out, or waiters queued behind the
 * lease would wait for their whole timeout. The timer never keeps the process alive.
 */
export function armMemoryLease(lease: MemoryLease, stillHeld: () => boolean, onEnd: () => void): void {
  clearTimeout(lease.timer);
  lease.timer = setTimeout(() => {
    if (!stillHeld()) return;
    if (lease.expiresAt > Date.now()) return armMemoryLease(lease, stillHeld, onEnd);
    onEnd();
  }, Math.max(0, lease.expiresAt - Date.now()));
  lease.timer.unref?.();
}
