import type { IKeyValue } from 'etcd3';
import type { EtcdLockClient } from './etcd-client.type';
import { isBrokenValue } from './etcd-contender-value';

/** How a holder's key stopped being its own: broken by an operator (`breakLock`), or removed otherwise. */
export type OwnKeyEnd = 'broken' | 'removed';

/**
 * How long the look back at a key's history may take (see `howOwnKeyEnded`). etcd serves a watch that
 * starts in the past from a group it catches up every 100 ms; past this the key is reported removed.
 */
const HISTORY_LOOK_MS = 1_000;

/**
 * What an event on the key created at `createRevision` says of its holder: undefined while the key is
 * still the holder's (its own moves to another lease); "broken" for `breakLock`'s mark, or for a delete
 * whose previous value is that mark (the watch began between the mark and the delete); "removed" for any
 * other delete, or for a later key under the same name (a reused lease).
 */
export function ownKeyEndOf(event: 'put' | 'delete', kv: Pick<IKeyValue, 'create_revision' | 'value'>, previous: Pick<IKeyValue, 'create_revision' | 'value'> | null | undefined, createRevision: string): OwnKeyEnd | undefined {
  if (event === 'put') {
    if (String(kv.create_revision) !== createRevision) return 'removed';
    return isBrokenValue(kv.value) ? 'broken' : undefined;
  }
  // etcd3 passes null, not undefined, for a watch without previous values: `?.` covers both.
  const marked = String(previous?.create_revision) === createRevision && isBrokenValue(previous?.value ?? '');
  return marked ? 'broken' : 'removed';
}

/**
 * How the key, found gone before a watch on it was in place, ended: its events since it was created,
 * replayed by a watch from the revision after `createRevision`. "removed" when the history cannot tell
 * (compacted, the watch failed, or no answer within HISTORY_LOOK_MS): the key is gone either way.
 */
export async function howOwnKeyEnded(client: EtcdLockClient, key: string, createRevision: string): Promise<OwnKeyEnd> {
  let watcher: Awaited<ReturnType<ReturnType<EtcdLockClient['watch']>['create']>>;
  try {
    watcher = await client.watch().key(key).startRevision(String(BigInt(createRevision) + 1n)).withPreviousKV().create();
  } catch {
    return 'removed';
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    return await new Promise<OwnKeyEnd>((resolve) => {
      timer = setTimeout(() => resolve('removed'), HISTORY_LOOK_MS);
      timer.unref?.();
      const settle = (end: OwnKeyEnd | undefined): void => {
        if (end) resolve(end);
      };
      watcher.on('put', (kv, previous) => settle(ownKeyEndOf('put', kv, previous, createRevision)));
      watcher.on('delete', (kv, previous) => settle(ownKeyEndOf('delete', kv, previous, createRevision)));
      watcher.on('error', () => resolve('removed'));
    });
  } finally {
    clearTimeout(timer);
    watcher.cancel().catch(() => undefined);
  }
}
