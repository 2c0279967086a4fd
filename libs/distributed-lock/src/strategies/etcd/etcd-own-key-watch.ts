import type { EtcdLockClient } from './etcd-client.type';

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
 * back under another create revision (a reused lease's later key with the same name is not ours).
 */
export class EtcdOwnKeyWatches {
  private readonly entries = new Map<string, { timer: NodeJS.Timeout; watcher?: Watcher; stopped: boolean }>();

  constructor(private readonly client: EtcdLockClient) {}

  watch(owner: string, key: string, createRevision: string, gone: () => void): void {
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

  private async arm(entry: { watcher?: Watcher; stopped: boolean }, key: string, createRevision: string, gone: () => void): Promise<void> {
    let reported = false;
    const report = (): void => {
      if (reported || entry.stopped) return;
      reported = true;
      gone();
    };
    try {
      const watcher = await this.client.watch().key(key).create();
      if (entry.stopped) {
        watcher.cancel().catch(() => undefined);
        return;
      }
      entry.watcher = watcher;
      watcher.on('delete', report);
      watcher.on('put', (kv: { create_revision: string | number }) => {
        if (String(kv.create_revision) !== createRevision) report();
      });
      // Deleted before the watch was in place: one look closes that gap.
      const now = await this.client.get(key).exec();
      if (now.kvs.length === 0 || String(now.kvs[0].create_revision) !== createRevision) report();
    } catch {
      // No watch (the connection is down): the next extension or the release still finds a lost key.
    }
  }
}
