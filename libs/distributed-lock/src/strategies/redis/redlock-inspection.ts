import type { LockMode } from '../../locking/lock-lease';
import type { LockInspection } from '../../locking/lock-query';
import { ownerOfAcquisition } from './redlock-acquisition-id';
import type { RedlockInspectReply } from './redlock.scripts';

/** What one master said of a key (REDLOCK_INSPECT_SCRIPT), its time moved onto this process's clock. */
export interface RedlockMasterView {
  /** The acquisition id its record names; '' when it has none. */
  readonly id: string;
  /** Its record is the lock hash of a master that keeps the line (RedlockQueueMaster), not a plain key. */
  readonly keepsLine: boolean;
  /** When its record ends on its own, on this process's clock; undefined when it has no expiry. */
  readonly expiresAt?: number;
  /** The live waiters of its line, first first (asked of the first master only). */
  readonly waiters: ReadonlyArray<{ readonly id: string; readonly mode: LockMode }>;
}

/**
 * A master's view from its reply. `localNow`, the middle of the call's round trip on this process's clock,
 * stands for the moment the server read its PTTL: off by at most half the round trip.
 */
export function masterViewOf(reply: RedlockInspectReply, localNow: number): RedlockMasterView {
  const [layout, id, pttl, queued] = reply;
  const waiters: Array<{ id: string; mode: LockMode }> = [];
  for (let i = 0; i + 1 < queued.length; i += 2) waiters.push({ id: queued[i], mode: queued[i + 1] === 's' ? 'shared' : 'exclusive' });
  return { id, keepsLine: layout === 'h', ...(id !== '' && pttl >= 0 ? { expiresAt: localNow + pttl } : {}), waiters };
}

/** What the masters say of a key together: its holder's acquisition id, if a majority names one, and the inspection. */
export interface RedlockReading {
  readonly holderId: string | undefined;
  readonly inspection: LockInspection;
}

/**
 * The key's state from the masters' views (`views[i]` undefined: master i did not answer in time; index 0
 * is the first master, which keeps the line). A holder only where at least `quorum` masters name the same
 * acquisition, as the holder itself counts its grant. Undefined when the views cannot tell: some acquisition
 * is named by fewer than a quorum, but by enough that the masters that did not answer could make one.
 *
 * The holder's lease end is the quorum-th latest of its masters' ends: past it fewer than a quorum keep its
 * record, and the lock is not held, whatever the others say. No grant time (the plain masters store none)
 * and no fencing token (Redlock has none). Waiters: the first master's line, headed by the contender its
 * vote was handed to while it collects the others' (the masters still hold the last holder's keys); none
 * (no queue known) when the first master did not answer, keeps the key as a plain one (an instance that
 * lists the masters in another order holds it, and keeps its line elsewhere), or has no record of a holder
 * the others name.
 */
export function redlockReadingOf(views: ReadonlyArray<RedlockMasterView | undefined>, quorum: number): RedlockReading | undefined {
  const unanswered = views.filter((view) => view === undefined).length;
  const voters = new Map<string, RedlockMasterView[]>();
  for (const view of views) {
    if (!view || view.id === '') continue;
    const list = voters.get(view.id);
    if (list) list.push(view);
    else voters.set(view.id, [view]);
  }
  let holderId: string | undefined;
  for (const [id, list] of voters) {
    if (list.length >= quorum) holderId = id;
    else if (list.length + unanswered >= quorum) return undefined;
  }
  const holders: Array<LockInspection['holders'][number]> = [];
  if (holderId !== undefined) {
    const ends = (voters.get(holderId) ?? []).flatMap((view) => (view.expiresAt === undefined ? [] : [view.expiresAt])).sort((a, b) => b - a);
    holders.push({ owner: ownerOfAcquisition(holderId), mode: 'exclusive', ...(ends.length >= quorum ? { expiresAt: ends[quorum - 1] } : {}) });
  }
  return { holderId, inspection: { holders, waiters: lineOf(views[0], holderId) } };
}

/** The waiters of the first master's line, in the order it serves them; undefined when it did not answer. */
function lineOf(first: RedlockMasterView | undefined, holderId: string | undefined): LockInspection['waiters'] {
  if (!first) return undefined;
  // A plain key there: the holder's instance lists the masters in another order and keeps its line on
  // another master, which this instance does not read. Nothing there while a majority names a holder: the
  // holder's grant never reached it, so no line of the holder's is kept there either. Unknown, not empty.
  if (!first.keepsLine && (first.id !== '' || holderId !== undefined)) return undefined;
  // The holder may still have its place: granted by the others while the first master's answer was late,
  // it stays in line until that place lapses. It waits for nothing.
  const line = first.waiters.filter((waiter) => waiter.id !== holderId).map((waiter) => ({ owner: ownerOfAcquisition(waiter.id), mode: waiter.mode }));
  // Its vote handed to the head of the line, which now asks the others: the next to be served. Only while a
  // majority still names another holder (the last one, its keys on their way out): with none named, the
  // others are between two holders, and the first master's vote-holder may as well be the holder whose
  // release has not reached it yet as the next one. A waiter list must not name a holder.
  const next = first.keepsLine && first.id !== '' && holderId !== undefined && first.id !== holderId && !first.waiters.some((waiter) => waiter.id === first.id);
  return next ? [{ owner: ownerOfAcquisition(first.id), mode: 'exclusive' }, ...line] : line;
}
