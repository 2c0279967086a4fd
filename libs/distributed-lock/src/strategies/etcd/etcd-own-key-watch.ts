import type { EtcdLockClient } from './etcd-client.type';
import { isBrokenValue } from './etcd-contender-value';
import { howOwnKeyEnded, ownKeyEndOf, type OwnKeyEnd } from './etcd-own-key-end';

type Watcher = Awaited<ReturnType<ReturnType<EtcdLockClient['watch']>['create']>>;

/**
 * A lock held longer than this gets a watch on its own key, so that a key deleted behind the holder's back
 * (an operator's `etcdctl del`, a bug) is reported at once instead of at the next extension, a third of the
 * lease in. A watch costs a round trip to set and one to cancel, and most critical sections are shorter;
 * a key deleted before the watch is set is still found by the look that follows it, or by the release.
 */
export const OWN_KEY_WATCH_DELAY_MS = 50;

/**
 * The watches on our own contender keys, by owner. `gone` is called once if the key is deleted, or comes
 * back under another create revision (a reused lease's later key with the same name is not ours): with
 * "broken" when `breakLock` marked it first (see etcd-contender-value.ts), "removed" otherwise.
 */
export class EtcdOwnKeyWatches {
  private readonly entries = new Map<string, { timer: NodeJS.Timeout; watcher?: Watcher; stopped: boolean }>();

  constructor(
    private readonly client: EtcdLockClient,
    /**
     * The keys are locks' (`breakLock` may mark them): a key the look finds gone is looked back at, to tell
     * a break from a removal. Permits are never broken: theirs are reported removed at once.
     */
    private readonly breakable = false,
  ) {}

  watch(owner: string, key: string, createRevision: string, gone: (end: OwnKeyEnd) => void): void {
    this.stop(owner);
    const entry: { timer: NodeJS.Timeout; watcher?: Watcher; stopped: boolean } = { timer: setTimeout(() => void this.arm(entry, key, createRevision, gone), OWN_KEY_WATCH_DELAY_MS), stopped: false };
    entry.timer.unref?.();
    this.entries.set(owner, entry);
  }

  stop(owner: string): void {
    const entry = this.entries.get(owner);
    if (!entry) return;
    this.entries.delete(owner);
    entry.stopped = true;
    clearTimeout(entry.timer);
    // Not awaited: the cancel round trip is not on the release's path.
    entry.watcher?.cancel().catch(() => undefined);
  }

  stopAll(): void {
    for (const owner of [...this.entries.keys()]) this.stop(owner);
  }

  private async arm(entry: { watcher?: Watcher; stopped: boolean }, key: string, createRevision: string, gone: (end: OwnKeyEnd) => void): Promise<void> {
    let reported = false;
    // Once the look below found the key gone, its history says how; later events under its name are not ours.
    let lookingBack = false;
    const report = (end: OwnKeyEnd | undefined): void => {
      if (!end || reported || entry.stopped) return;
      reported = true;
      gone(end);
    };
    try {
      // With the previous value on a delete: a watch set between a break's mark and its delete still tells.
      const watch = this.client.watch().key(key);
      const watcher = await (this.breakable ? watch.withPreviousKV() : watch).create();
      if (entry.stopped) {
        watcher.cancel().catch(() => undefined);
        return;
      }
      entry.watcher = watcher;
      watcher.on('put', (kv, previous) => {
        if (!lookingBack) report(ownKeyEndOf('put', kv, previous, createRevision));
      });
      watcher.on('delete', (kv, previous) => {
        if (!lookingBack) report(ownKeyEndOf('delete', kv, previous, createRevision));
      });
      // Changed before the watch was in place: one look closes that gap, and for a key already gone a look
      // back at its history tells a break from a removal (a break comes quickly after the grant too).
      const own = (await this.client.get(key).exec()).kvs[0];
      if (own && String(own.create_revision) === createRevision) return report(isBrokenValue(own.value) ? 'broken' : undefined);
      if (reported || entry.stopped) return;
      if (!this.breakable) return report('removed');
      lookingBack = true;
      report(await howOwnKeyEnded(this.client, key, createRevision));
    } catch {
      // No watch (the connection is down): the next extension or the release still finds a lost key.
    }
  }
}
