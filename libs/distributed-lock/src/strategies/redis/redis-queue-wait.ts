import type { WaitBudget } from '../../locking/lock-lease';
import { budgetAborted, waitForWake } from '../../locking/wait-for-wake';
import type { RedisInbox } from './redis-inbox';

/** The server steps of a wait in a Redis queue (a fair lock's, a semaphore's). */
export interface RedisQueueSteps {
  /**
   * One acquire script: with `waiter`, join the queue or refresh our place in it; without, a plain try.
   * Resolves the fencing token when we hold, undefined when we wait.
   */
  attempt(waiter: boolean): Promise<number | undefined>;
  /** Leave the queue; resolves the token of a hand-over that came at the last moment, undefined otherwise. */
  leave(): Promise<number | undefined>;
}

/** How a wait in a Redis queue ended with the lock (or permit): its token, and when it can have started. */
export interface RedisQueueGrant {
  readonly token: number;
  /** Local time before the grant happened on the server: its lease counts from here. */
  readonly since: number;
  /** Handed over by a release while we waited: reserved for a short claim only (see the scripts' hand_over). */
  readonly handedOver: boolean;
}

/**
 * Waits in a Redis queue until a release hands us the lock, told on this client's inbox, re-checking (and
 * refreshing our place) every `recheckMs` in case the message was lost. Until the strategy's first wait
 * the inbox is not subscribed: the first check is a plain try, so an uncontended application never opens
 * a subscriber connection. Resolves null when the budget ends or is aborted (our place is left first).
 */
export async function waitInRedisQueue(inbox: RedisInbox, owner: string, recheckMs: number, budget: WaitBudget, steps: RedisQueueSteps): Promise<RedisQueueGrant | null> {
  const deadline = Date.now() + budget.timeoutMs;
  if (!inbox.isOpen) {
    const firstTry = Date.now();
    const token = await steps.attempt(false);
    budget.serverAnswered?.();
    if (token !== undefined) return { token, since: firstTry, handedOver: false };
  }
  let wake: (() => void) | undefined;
  // `queuedSince`: when the last check that left us waiting was sent; a hand-over came after that check
  // ran on the server.
  const state: { queuedSince: number; handedOver?: number } = { queuedSince: Date.now() };
  const expecting = inbox.expect(owner, (token) => {
    state.handedOver = token;
    wake?.();
  });
  await expecting.ready;
  try {
    while (!budgetAborted(budget)) {
      const sentAt = Date.now();
      const token = await steps.attempt(true);
      budget.serverAnswered?.();
      if (token !== undefined) return { token, since: sentAt, handedOver: false };
      if (state.handedOver !== undefined) return { token: state.handedOver, since: state.queuedSince, handedOver: true };
      state.queuedSince = sentAt;
      const remaining = deadline - Date.now();
      if (remaining <= 0) break;
      await waitForWake(budget, Date.now() + Math.min(remaining, recheckMs), (woken) => {
        wake = woken;
        return () => (wake = undefined);
      });
      if (state.handedOver !== undefined) return { token: state.handedOver, since: state.queuedSince, handedOver: true };
    }
    const token = await steps.leave();
    return token === undefined ? null : { token, since: state.queuedSince, handedOver: true };
  } finally {
    expecting.stop();
  }
}
