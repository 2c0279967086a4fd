import type { LeaseGrant, LockRequest } from '../../locking/lock-lease';
import type { TransferOutcome } from '../../locking/lock-strategy.interface';
import { ZK_ERRORS, zkErrorCode } from './zookeeper-client.type';
import type { ZooKeeperHeldNodes } from './zookeeper-held-nodes';
import { encodeHoldData, zkFencingToken, ZK_MAX_PASSES } from './zookeeper-hold-token';
import type { ZooKeeperLeaseGrant } from './zookeeper-lock.strategy';
import type { ZooKeeperSession } from './zookeeper-session';

/** What a pass needs of the strategy: its holds, its session, and how it deletes a node or releases a hold. */
export interface LocalPassContext {
  readonly held: ZooKeeperHeldNodes;
  readonly session: ZooKeeperSession;
  readonly deleteNode: (path: string) => Promise<boolean>;
  readonly release: (lease: LeaseGrant) => Promise<boolean>;
}

/**
 * Passes the exclusive hold of `lease` to `next`, a contender of this process (lock cohorting, see
 * `localHandover`): the node stays, and one versioned write of its data names the new owner and the pass,
 * which is the low part of the new fencing token (see zkFencingToken). Nobody in another process is woken:
 * the waiter behind the node watches it for its deletion, and a data change only makes it look again.
 * The write is conditional on the data version our last write left: a break's mark in between makes it
 * fail, and the hold is not passed (null), as when the node or its session is gone. A write whose answer
 * is lost deletes the node, so that the lock goes back to the queue, and rejects.
 */
export async function passHold(context: LocalPassContext, lease: LeaseGrant, next: LockRequest): Promise<TransferOutcome> {
  const { held, session, deleteNode } = context;
  const node = held.get(lease.owner);
  if (!node || !session.isAlive(node.client)) return null;
  const pass = node.pass + 1;
  if (pass > ZK_MAX_PASSES) return (await context.release(lease)) ? 'released' : null;
  const sentAt = Date.now();
  // The old lease no longer ends the node: its holder's section is over, and the node is about to be passed.
  held.startPassing(node);
  let version: number;
  try {
    ({ version } = await node.client.set(node.path, encodeHoldData({ owner: next.owner, pass }), node.version));
  } catch (error) {
    held.forget(lease.owner);
    const code = zkErrorCode(error);
    const gone = code === ZK_ERRORS.NO_NODE || code === ZK_ERRORS.BAD_VERSION || session.endedBy(node.client, error);
    const deletion = deleteNode(node.path).catch(() => false);
    if (gone) return null;
    await deletion;
    throw error;
  }
  held.forget(lease.owner);
  // The session may have ended while the write was on its way: its nodes went with it.
  if (!session.isAlive(node.client)) {
    void deleteNode(node.path).catch(() => false);
    return null;
  }
  const { expiresAt } = held.hold(next, node.client, node.path, { zxid: node.zxid, pass, version }, sentAt, true);
  const grant: ZooKeeperLeaseGrant = { key: lease.key, owner: next.owner, mode: 'exclusive', fencingToken: zkFencingToken(node.zxid, pass), expiresAt, znode: node.path };
  return grant;
}
