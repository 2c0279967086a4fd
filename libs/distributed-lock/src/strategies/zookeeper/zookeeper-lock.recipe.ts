import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import type { WaitBudget } from '../../locking/lock-lease';
import { budgetAborted, waitForWake } from '../../locking/wait-for-wake';
import { ZK_ERRORS, zkErrorCode, type ZooKeeperLockClient } from './zookeeper-client.type';
import type { ZooKeeperOrphans } from './zookeeper-orphans';
import { restrictToCreator } from './zookeeper-acl';
import { isZkWriter, zkSequence } from './zookeeper-paths';

// Flags of the zookeeper client (see its constants): 0 persistent, 3 ephemeral + sequential, 4 container.
const PERSISTENT = 0;
const EPHEMERAL_SEQUENTIAL = 3;
const CONTAINER = 4;

/**
 * Creates `path` (and its parent) if missing: the base as a persistent node, the lock node as a container
 * node, which the server deletes once its last contender is gone (no empty lock nodes pile up). With
 * `restrict` (the session authenticates), each node it creates is given the creator-only ACL at once (see
 * restrictToCreator); a node that existed keeps the ACL it has (an operator's, or ours from before).
 * `lockData` is what the lock node carries when it is created here (a semaphore's: its size).
 */
export async function ensureLockNode(client: ZooKeeperLockClient, base: string, lockPath: string, restrict = false, lockData = ''): Promise<void> {
  for (const [path, flags, data] of [
    [base, PERSISTENT, ''],
    [lockPath, CONTAINER, lockData],
  ] as const) {
    try {
      await client.create(path, data, flags);
    } catch (error) {
      if (zkErrorCode(error) !== ZK_ERRORS.NODE_EXISTS) throw error;
      continue;
    }
    if (restrict) await restrictToCreator(client, path);
  }
}

/** Look-ups of our protected node after a lost create: backoff between them, capped; about 3.5 s in all. */
const LOOKUP_DELAYS_MS = [0, 50, 100, 200, 400, 800, 1_000, 1_000];

/**
 * Creates our ephemeral sequential node under the lock node and returns its path. The name starts with
 * `prefix`, which carries a protection id (Curator's "protected" mode): a create whose answer was lost
 * with the connection may still have happened, so we look for our node before creating again. Creating
 * again blindly would leave the first node alive for the whole session, ahead of us and of everyone
 * after us: the lock would block until this process ends. Extra nodes found with our prefix (possible
 * only if an earlier look-up missed a create still in flight) are handed to `orphans`; the caller hands
 * `prefix` to them too when this throws, since the outcome of the last create is then unknown (a refusal,
 * NOAUTH, is thrown at once: the create did not happen). With `paths.restrict`, the lock node and the base,
 * when created here, get the creator-only ACL; the lock node, `paths.lockData`. After five tries without a
 * node, rejects with `LockBackendUnavailableError` naming `strategy`.
 */
export async function createContender(
  client: ZooKeeperLockClient,
  paths: { readonly base: string; readonly lockPath: string; readonly prefix: string; readonly restrict?: boolean; readonly lockData?: string },
  owner: string,
  orphans: Pick<ZooKeeperOrphans, 'adopt'>,
  strategy: string,
): Promise<string> {
  const { base, lockPath, prefix } = paths;
  const started = Date.now();
  for (let attempt = 0; attempt < 5; attempt += 1) {
    try {
      return await client.create(`${lockPath}/${prefix}`, owner, EPHEMERAL_SEQUENTIAL);
    } catch (error) {
      const code = zkErrorCode(error);
      if (code === ZK_ERRORS.NO_NODE) {
        // The container node was reaped between our create of it and of our child: create it again.
        await ensureLockNode(client, base, lockPath, paths.restrict, paths.lockData);
        continue;
      }
      if (code !== ZK_ERRORS.CONNECTION_LOSS && code !== ZK_ERRORS.OPERATION_TIMEOUT) throw error;
      const [mine, ...extra] = await findProtected(client, lockPath, prefix);
      for (const name of extra) orphans.adopt(lockPath, name);
      if (mine) return `${lockPath}/${mine}`;
    }
  }
  throw new LockBackendUnavailableError(strategy, `acquire (no contender node could be created under ${lockPath})`, Date.now() - started);
}

/** Our nodes (names starting with `prefix`), lowest sequence first; retries until a look-up answers. */
async function findProtected(client: ZooKeeperLockClient, lockPath: string, prefix: string): Promise<string[]> {
  let lastError: unknown;
  for (const delayMs of LOOKUP_DELAYS_MS) {
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    try {
      const children = await client.get_children(lockPath, false);
      return children.filter((name) => name.startsWith(prefix)).sort((a, b) => zkSequence(a) - zkSequence(b));
    } catch (error) {
      if (zkErrorCode(error) === ZK_ERRORS.NO_NODE) return []; // no lock node: no node of ours under it
      lastError = error;
    }
  }
  throw lastError;
}

/**
 * Who we must wait for, or undefined when we hold the lock. A writer waits for the node just before it,
 * a reader for the last writer before it: each waiter watches one node, so a release wakes one waiter
 * (no herd effect), in arrival order. Rejects with `LockBackendUnavailableError` naming `strategy` when our
 * node is no longer listed (its session expired).
 */
export async function blockerOf(client: ZooKeeperLockClient, lockPath: string, ownName: string, mode: 'exclusive' | 'shared', strategy: string): Promise<string | undefined> {
  const sentAt = Date.now();
  const blocker = blockerAmong(await client.get_children(lockPath, false), lockPath, ownName, mode);
  if (blocker === 'absent') throw new LockBackendUnavailableError(strategy, `acquire (its node ${ownName} under ${lockPath} is gone: session expired?)`, Date.now() - sentAt);
  return blocker;
}

/** `blockerOf` over a listing already made; 'absent' when our node is not in it. */
export function blockerAmong(children: readonly string[], lockPath: string, ownName: string, mode: 'exclusive' | 'shared'): string | undefined | 'absent' {
  const sorted = [...children].sort((a, b) => zkSequence(a) - zkSequence(b));
  const index = sorted.indexOf(ownName);
  if (index < 0) return 'absent';
  const ahead = sorted.slice(0, index);
  const blocker = mode === 'exclusive' ? ahead[ahead.length - 1] : [...ahead].reverse().find(isZkWriter);
  return blocker === undefined ? undefined : `${lockPath}/${blocker}`;
}

/** A children listing with the lock node's stat, as `get_children2` answers. */
export interface ChildrenWithStat {
  readonly children: readonly string[];
  readonly stat: { readonly pzxid: number | string; readonly cversion: number | string };
}

/**
 * Lists the lock node's children with its stat. Sent right before and right behind our create on the same
 * session (the server answers a session's requests in order, so the second listing includes our node):
 * the first look at who is ahead costs no round trip of its own. Undefined when it failed (the caller
 * lists again; before the create, the lock node may not exist yet).
 */
export function listAroundCreate(client: ZooKeeperLockClient, lockPath: string): Promise<ChildrenWithStat | undefined> {
  return client.get_children2(lockPath, false).then(
    (answer) => {
      const [children, stat] = answer as [string[], { pzxid: number | string; cversion: number | string }];
      return { children, stat };
    },
    () => undefined,
  );
}

/**
 * The fencing token read off a first look that shows our node alone: the lock node's pzxid, the zxid of
 * the last change to its children, which is our node's czxid when our create was the only change between
 * the look before it and the look behind it (cversion, which counts creates and deletes of children, went
 * up by one). Then no read of our own node is needed. When another contender's node came or went in
 * between (the last holder's release, say), pzxid is that change's zxid and not our czxid, which a query
 * names as our token: undefined then, as when others are listed or the look before failed, and the caller
 * reads our czxid. (The sequence suffix cannot tell: ZooKeeper numbers creates only.)
 */
export function tokenFromFirstLook(listing: ChildrenWithStat, ownName: string, before: ChildrenWithStat | undefined): number | undefined {
  if (before === undefined || Number(listing.stat.cversion) !== Number(before.stat.cversion) + 1) return undefined;
  return listing.children.length === 1 && listing.children[0] === ownName ? Number(listing.stat.pzxid) : undefined;
}

/**
 * Resolves true once `path` is deleted (or already gone) or `alsoDone` resolves, false when the budget
 * ends or is aborted.
 */
export async function waitForDeletion(client: ZooKeeperLockClient, path: string, budget: WaitBudget, deadline: number, alsoDone?: Promise<void>): Promise<boolean> {
  if (budgetAborted(budget) || Date.now() >= deadline) return false;
  let fired: () => void = () => undefined;
  const deleted = new Promise<void>((resolve) => (fired = resolve));
  const watcher = (): void => fired();
  try {
    // One watch on one node; any event on it (deleted, or its data changed) means: look again. The session's
    // end wakes the wait through `alsoDone`: no watch fires then.
    await client.w_exists(path, watcher);
  } catch (error) {
    if (zkErrorCode(error) === ZK_ERRORS.NO_NODE) return true;
    throw error;
  }
  const woken = await waitForWake(budget, deadline, (wake) => {
    void deleted.then(wake);
    void alsoDone?.then(wake);
  });
  // Ended without the event (timeout, abort, the session): the watch no longer calls us.
  client.unwatch(path, watcher);
  return woken;
}
