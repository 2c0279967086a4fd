import type { WaitBudget } from '../../locking/lock-lease';
import { budgetAborted, waitForWake } from '../../locking/wait-for-wake';
import type { SameProcessWait } from '../same-process-line';
import type { EtcdLockClient } from './etcd-client.type';
import type { Blocker } from './etcd-lock.recipe';

/** How a wait behind a contender ended: told of its release here, to look again, or out of budget. */
export type BlockerWaitOutcome = SameProcessWait<'released'>['outcome'];

/**
 * Watches the blocker's key until that contender is gone. The watch starts at the current revision, not
 * at the one we read the key at: etcd serves a watch that starts in the past from its "unsynced" group,
 * which catches up only every 100 ms, and that delay would land on every hand-over. A deletion between
 * our read and the watch is caught by reading the key once the watch is in place. Any event on the key
 * (its deletion, or the same name created again by a reused lease) means: look again. A writer also
 * listens here, through `listenHere`, for a blocker of this process whose answer reached us after ours
 * ('told' when it released). Resolves 'timeout' when the budget ends.
 */
export async function watchBlocker(
  client: EtcdLockClient,
  blocker: Blocker,
  budget: WaitBudget,
  deadline: number,
  /** Subscribes to the news of the blocker's release in this process; returns the way to stop listening. */
  listenHere?: (onNews: (news: 'released' | undefined) => void) => () => void,
): Promise<BlockerWaitOutcome> {
  if (budgetAborted(budget) || Date.now() >= deadline) return 'timeout';
  let told = false;
  let wakeOnNews: () => void = () => undefined;
  const stopListening = listenHere
    ? listenHere((news) => {
        told = news !== undefined;
        wakeOnNews();
      })
    : () => undefined;
  let watcher: Awaited<ReturnType<ReturnType<EtcdLockClient['watch']>['create']>>;
  try {
    watcher = await client.watch().key(blocker.key).create();
  } catch (error) {
    stopListening();
    throw error;
  }
  try {
    if (told) return 'told';
    let gone: () => void = () => undefined;
    const goneBeforeWatch = new Promise<void>((resolve) => (gone = resolve));
    void client
      .get(blocker.key)
      .exec()
      .then(
        (response) => (response.kvs.length === 0 || String(response.kvs[0].create_revision) !== blocker.createRevision) && gone(),
        () => gone(), // cannot tell: look again
      );
    const woken = await waitForWake(budget, deadline, (wake) => {
      watcher.on('delete', wake);
      watcher.on('put', wake);
      // A broken watch is not a deletion, but a reason to look again (the caller re-reads who is ahead).
      watcher.on('error', wake);
      void goneBeforeWatch.then(wake);
      wakeOnNews = wake;
    });
    if (told) return 'told';
    return woken ? 'look-again' : 'timeout';
  } finally {
    stopListening();
    // Not awaited: the cancel round trip is not on the hand-over's path.
    watcher.cancel().catch(() => undefined);
  }
}
