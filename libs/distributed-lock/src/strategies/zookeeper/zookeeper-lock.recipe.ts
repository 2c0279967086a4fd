import { randomUUID } from 'node:crypto';
import type { WaitBudget } from '../../locking/lock-lease';
import { waitForWake } from '../../locking/wait-for-wake';
import { ZK_ERRORS, zkErrorCode, type ZooKeeperLockClient } from './zookeeper-client.type';
import { isZkWriter, zkContenderPrefix, zkSequence } from './zookeeper-paths';

// Flags of the zookeeper client (see its constants): 0 persistent, 3 ephemeral + sequential, 4 container.
const PERSISTENT = 0;
const EPHEMERAL_SEQUENTIAL = 3;
const CONTAINER = 4;

/** Creates `path` (and its parent) if missing: the base as a persistent node, the lock node as a container
 * node, which the server deletes once its last contender is gone (no empty lock nodes pile up). */
export async function ensureLockNode(client: ZooKeeperLockClient, base: string, lockPath: string): Promise<void> {
  for (const [path, flags] of [
    [base, PERSISTENT],
    [lockPath, CONTAINER],
  ] as const) {
    try {
      await client.create(path, '', flags);
    } catch (error) {
      if (zkErrorCode(error) !== ZK_ERRORS.NODE_EXISTS) throw error;
    }
  }
}

/**
 * Creates our ephemeral sequential node under the lock node. The name carries a protection id, so that
 * a create whose answer was lost with the connection is found again instead of being left behind as an
 * orphan that would block everyone until the session ends (Curator's "protected" mode).
 */
export async function createContender(
  client: ZooKeeperLockClient,
  base: string,
  lockPath: string,
  mode: 'exclusive' | 'shared',
  owner: string,
): Promise<string> {
  const prefix = zkContenderPrefix(randomUUID(), mode);
  for (let attempt = 0; attempt < 5; attempt += 1) {
    try {
      return await client.create(`${lockPath}/${prefix}`, owner, EPHEMERAL_SEQUENTIAL);
    } catch (error) {
      const code = zkErrorCode(error);
      if (code === ZK_ERRORS.NO_NODE) {
        // The container node was reaped between our create of it and of our child: create it again.
        await ensureLockNode(client, base, lockPath);
        continue;
      }
      if (code === ZK_ERRORS.CONNECTION_LOSS || code === ZK_ERRORS.OPERATION_TIMEOUT) {
        const mine = (await client.get_children(lockPath, false).catch(() => [] as string[])).find((name) => name.startsWith(prefix));
        if (mine) return `${lockPath}/${mine}`;
        continue;
      }
      throw error;
    }
  }
  throw new Error(`could not create a contender node under ${lockPath}`);
}

/**
 * Who we must wait for, or undefined when we hold the lock. A writer waits for the node just before it,
 * a reader for the last writer before it: each waiter watches one node, so a release wakes one waiter
 * (no herd effect), in arrival order.
 */
export async function blockerOf(client: ZooKeeperLockClient, lockPath: string, ownName: string, mode: 'exclusive' | 'shared'): Promise<string | undefined> {
  const children = (await client.get_children(lockPath, false)).sort((a, b) => zkSequence(a) - zkSequence(b));
  const index = children.indexOf(ownName);
  if (index < 0) throw new Error(`our node ${ownName} is gone (session expired?)`);
  const ahead = children.slice(0, index);
  const blocker = mode === 'exclusive' ? ahead[ahead.length - 1] : [...ahead].reverse().find(isZkWriter);
  return blocker === undefined ? undefined : `${lockPath}/${blocker}`;
}

/** Resolves true once `path` is deleted (or already gone), false when the budget ends or is aborted. */
export async function waitForDeletion(client: ZooKeeperLockClient, path: string, budget: WaitBudget, deadline: number): Promise<boolean> {
  if (budget.signal.aborted || Date.now() >= deadline) return false;
  let fired: () => void = () => undefined;
  const deleted = new Promise<void>((resolve) => (fired = resolve));
  try {
    // One watch on one node; any event on it (deletion, or a session event) means: look again.
    await client.w_exists(path, () => fired());
  } catch (error) {
    if (zkErrorCode(error) === ZK_ERRORS.NO_NODE) return true;
    throw error;
  }
  return waitForWake(budget, deadline, (wake) => {
    void deleted.then(wake);
  });
}
