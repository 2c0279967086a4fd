import type { WaitBudget } from '../../locking/lock-lease';
import { budgetAborted, waitForWake } from '../../locking/wait-for-wake';
import type { RedisInbox } from './redis-inbox';

/**
 * One check of a wait in a Redis queue: held, with the grant's token; or still waiting, with what the
 * server had issued when the check ran (its newest token where it knows it, 0 otherwise, and its clock in
 * µs): a hand-over whose token is not above that came before the check, which did not find it (see `lapsed`).
 */
export type RedisQueueCheck = { readonly held: true; readonly token: number } | WaitingCheck;

/** A check that left us waiting: the newest token issued then (0 where unknown), and the server's clock (µs). */
export interface WaitingCheck {
  readonly held: false;
  readonly newestToken: number;
  readonly serverUs: number;
}

/** The check an acquire script answered: `held` with its token, or waiting with the newest token issued and the server's clock (µs). */
export function queueCheck(held: boolean, token: number, serverUs: number): RedisQueueCheck {
  return held ? { held, token } : { held, newestToken: token, serverUs };
}

/**
 * True when the hand-over of `token` came before `check` ran on the server: tokens only grow, and a token is
 * never below the server's clock (µs) at its grant. That check found the place no longer ours (its claim
 * ran out, while this process was frozen or its messages were late, and the server may have given it to
 * another): the message that tells of it late is not a grant. A server clock stepping back can make a
 * live hand-over look lapsed: the next check then finds it held and takes it, one re-check later.
 */
function lapsed(token: number, check: WaitingCheck): boolean {
  return token <= check.newestToken || token < check.serverUs;
}

/** The server steps of a wait in a Redis queue (a fair lock's, a semaphore's). */
export interface RedisQueueSteps {
  /** One acquire script: with `waiter`, join the queue or refresh our place in it; without, a plain try. */
  attempt(waiter: boolean): Promise<RedisQueueCheck>;
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
 * Waits in a Redis queue until a release hands us the lock, told on this client's inbox (or, barging, wakes
 * us to try for a lock it left free: the next check runs at once), re-checking (and
 * refreshing our place) every `recheckMs` in case the message was lost. Until the strategy's first wait
 * the inbox is not subscribed: the first check is a plain try, so an uncontended application never opens
 * a subscriber connection. Resolves null when the budget ends or is aborted (our place is left first).
 */
export async function waitInRedisQueue(
  inbox: RedisInbox,
  owner: string,
  recheckMs: number,
  budget: WaitBudget,
  steps: RedisQueueSteps,
  /**
   * Barging locks: the window. A head is woken once per turn as head; when the check a wake brought finds
   * the lock taken again, the next check comes after this long (the window has passed by then: the lock is
   * either free for the head to take, or handed to it at the next release), not after `recheckMs`.
   */
  afterWakeMs?: number,
): Promise<RedisQueueGrant | null> {
  const deadline = Date.now() + budget.timeoutMs;
  if (!inbox.isOpen) {
    const firstTry = Date.now();
    const check = await steps.attempt(false);
    budget.serverAnswered?.();
    if (check.held) return { token: check.token, since: firstTry, handedOver: false };
  }
  let wake: (() => void) | undefined;
  // `queuedSince`: when the last check that left us waiting was sent, and `waiting` what it saw. A hand-over
  // with a token above what it saw came after it ran on the server, so after `queuedSince`; one that is
  // not came before it, and lapsed (see `lapsed`): its message came late (pub/sub messages come on a
  // connection of their own, in no order with the replies on the other).
  const state: { queuedSince: number; waiting?: WaitingCheck; handedOver?: number } = { queuedSince: Date.now() };
  // Wakes (barging mode: a release left the lock free for us to try) are counted, so that one arriving
  // while a check is on its way is not lost: that check may have run before the release.
  let wakes = 0;
  let checkedWakes = 0;
  const expecting = inbox.expect(
    owner,
    (token) => {
      if (state.waiting && lapsed(token, state.waiting)) return;
      state.handedOver = token;
      wake?.();
    },
    () => {
      wakes += 1;
      wake?.();
    },
  );
  await expecting.ready;
  try {
    while (!budgetAborted(budget)) {
      const sentAt = Date.now();
      const woken = wakes !== checkedWakes;
      const seenWakes = wakes;
      checkedWakes = wakes;
      const check = await steps.attempt(true);
      budget.serverAnswered?.();
      if (check.held) return { token: check.token, since: sentAt, handedOver: false };
      // Told while this check was on its way, of a hand-over the check then found gone.
      if (state.handedOver !== undefined && lapsed(state.handedOver, check)) state.handedOver = undefined;
      if (state.handedOver !== undefined) return { token: state.handedOver, since: state.queuedSince, handedOver: true };
      state.waiting = check;
      state.queuedSince = sentAt;
      const remaining = deadline - Date.now();
      if (remaining <= 0) break;
      if (wakes !== seenWakes) continue;
      const pause = woken && afterWakeMs !== undefined ? Math.min(afterWakeMs, recheckMs) : recheckMs;
      await waitForWake(budget, Date.now() + Math.min(remaining, pause), (woke) => {
        wake = woke;
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
