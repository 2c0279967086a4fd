import type { LockInspection } from '../../locking/lock-query';
import type { EtcdLockClient } from './etcd-client.type';
import { brokenValue } from './etcd-contender-value';
import type { EtcdHoldSeen } from './etcd-lock-inspection';

/**
 * Ends the holds an inspection saw, one by one, each only while its key is still that hold: every step is a
 * transaction on the key's create revision (a later contender under the same name, a reused lease, has
 * another, and is left alone).
 *
 * A hold ends in two writes (one transaction cannot put and delete the same key):
 * 1. its value is marked broken, on the lease it is on (`ignoreLease`). The holder's watch on its own key
 *    sees that put and reports "broken" at once, in whatever process it runs (see EtcdOwnKeyWatches).
 * 2. the key is deleted, as a release deletes it: the contender behind it, which watches it, goes next, with
 *    a key created later, so a higher fencing token.
 * Should the second write never come, the holder was still told by the mark, and the next `breakLock`
 * deletes the key. Resolves the holds ended.
 */
export async function breakEtcdHolds(client: EtcdLockClient, holds: readonly EtcdHoldSeen[]): Promise<Array<LockInspection['holders'][number]>> {
  const ended: Array<LockInspection['holders'][number]> = [];
  for (const hold of holds) {
    const whileThatHold = () => client.if(hold.key, 'Create', '==', hold.createRevision);
    const marked = await whileThatHold().then(client.put(hold.key).value(brokenValue(hold.holder.owner)).ignoreLease()).commit();
    if (!marked.succeeded) continue;
    // Ended by this delete, or by its holder letting go since the mark: the hold that was seen is over.
    await whileThatHold().then(client.delete().key(hold.key)).commit();
    ended.push(hold.holder);
  }
  return ended;
}
