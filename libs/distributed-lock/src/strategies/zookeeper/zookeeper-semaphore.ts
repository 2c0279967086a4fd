import { randomUUID } from 'node:crypto';
import { PermitsMismatchError } from '../../errors/permits-mismatch.error';
import { leaseExpiry } from '../../locking/lease-expiry';
import type { PermitGrant, PermitRequest, WaitBudget } from '../../locking/lock-lease';
import type { LeaseLostListener, SemaphoreStrategy } from '../../locking/lock-strategy.interface';
import { permitGrantOf } from '../../locking/permit-grant';
import { budgetAborted, waitForWake } from '../../locking/wait-for-wake';
import { ZK_DELETED_EVENT, ZK_ERRORS, zkErrorCode, type ZooKeeperLockClient } from './zookeeper-client.type';
import { createContender } from './zookeeper-lock.recipe';
import type { ZooKeeperOrphans } from './zookeeper-orphans';
import { zkSemaphorePath, zkSequence } from './zookeeper-paths';
import type { ZooKeeperSession } from './zookeeper-session';

/**
 * What the semaphore shares with its strategy: the session (its client, its end), the orphan sweeper, the
 * base path, and its identity's rules: whether the nodes it creates get the creator-only ACL (`digestAuth`),
 * and the typed error for a refusal.
 */
export interface ZooKeeperSemaphoreDeps {
  readonly name: string;
  readonly basePath: string;
  readonly session: Pick<ZooKeeperSession, 'client' | 'onExpired'>;
  readonly orphans: Pick<ZooKeeperOrphans, 'adopt'>;
  readonly restrict: boolean;
  /** `LockPermissionDeniedError` for a NOAUTH answer (see zkPermissionDenied), undefined for any other. */
  permissionDenied(error: unknown, operation: string, key?: string): Error | undefined;
}

/** A permit node of ours: held or waiting, with the timer of its lease and the watch on its session once held. */
interface PermitNode {
  readonly path: string;
  /** The semaphore's key, for the errors about the node. */
  readonly key: string;
  timer?: NodeJS.Timeout;
  stopWatchingSession?: () => void;
  /** Told when the permit is lost: its lease ends here, its node is deleted, its session ends. */
  readonly listeners: Set<LeaseLostListener>;
}

/** Where a request stands in its semaphore's queue. */
type Standing = { readonly kind: 'holds' } | { readonly kind: 'waits' } | { readonly kind: 'mismatch'; readonly actual: number } | { readonly kind: 'gone' };

/** A permit node's name: protection id, the semaphore's size and the permit's weight, then ZooKeeper's sequence. */
const nodePrefix = (request: PermitRequest): string => `_p_${randomUUID()}-p${request.permits}-w${request.weight}-`;
const NODE_NAME = /-p(\d+)-w(\d+)-\d{10}$/;

/**
 * Whether our node `ownName` holds: the children are the semaphore's queue in sequence order, and a node
 * holds when the weights of the nodes before it and its own fit in `permits` (the holders are the head of
 * the queue; no waiter overtakes one ahead of it). Another size anywhere in the queue is a mismatch.
 */
function standingOf(request: PermitRequest, ownName: string, children: readonly string[]): Standing {
  const sorted = [...children].filter((name) => NODE_NAME.test(name)).sort((a, b) => zkSequence(a) - zkSequence(b));
  const index = sorted.indexOf(ownName);
  if (index < 0) return { kind: 'gone' };
  for (const name of sorted) {
    const permits = Number(NODE_NAME.exec(name)?.[1]);
    if (name !== ownName && permits !== request.permits) return { kind: 'mismatch', actual: permits };
  }
  const used = sorted.slice(0, index).reduce((sum, name) => sum + Number(NODE_NAME.exec(name)?.[2]), 0);
  return used + request.weight <= request.permits ? { kind: 'holds' } : { kind: 'waits' };
}

/**
 * Counting semaphores in ZooKeeper, for `ZooKeeperLockStrategy`, after Curator's InterProcessSemaphoreV2:
 * every acquisition creates an ephemeral sequential node under the semaphore's node (its size and weight in
 * its name), and the head of the queue whose weights fit in `permits` holds: FIFO. A waiter watches the
 * children (any node ahead leaving may let it in, not only the one N ahead). The permit's lease is the
 * node: gone with the holder's session, and deleted here when the lease runs out unextended, as the
 * lock's. The fencing token is the node's czxid, in the order of the grants.
 */
export class ZooKeeperSemaphore implements SemaphoreStrategy {
  readonly signalsServerAnswer = true;
  private readonly nodes = new Map<string, PermitNode>();

  constructor(private readonly deps: ZooKeeperSemaphoreDeps) {}

  /** True while this strategy holds or waits for a permit (the session then watches for being cut off). */
  holdsPermits(): boolean {
    return this.nodes.size > 0;
  }

  tryAcquire(request: PermitRequest): Promise<PermitGrant | null> {
    return this.take(request, undefined);
  }

  acquire(request: PermitRequest, budget: WaitBudget): Promise<PermitGrant | null> {
    return this.take(request, budget);
  }

  async extend(lease: PermitGrant, ttlMs: number): Promise<PermitGrant | null> {
    const node = this.nodes.get(lease.owner);
    if (!node) return null;
    const sentAt = Date.now();
    const client = await this.deps.session.client();
    let stillThere: boolean;
    try {
      stillThere = Boolean(await client.exists(node.path, false));
    } catch (error) {
      if (zkErrorCode(error) !== ZK_ERRORS.NO_NODE) throw error;
      stillThere = false;
    }
    if (!stillThere) {
      this.forget(lease.owner);
      return null;
    }
    const expiresAt = leaseExpiry(sentAt, ttlMs);
    this.armLease(lease.owner, node, expiresAt);
    return { ...lease, expiresAt };
  }

  async release(lease: PermitGrant): Promise<boolean> {
    if (!this.nodes.has(lease.owner)) return false;
    return this.leave(lease.owner);
  }

  /** Gives back every permit of this strategy (its close; the session's end would too). */
  async close(): Promise<void> {
    await Promise.all([...this.nodes.keys()].map((owner) => this.leave(owner).catch(() => false)));
  }

  private async take(request: PermitRequest, budget: WaitBudget | undefined): Promise<PermitGrant | null> {
    const deadline = Date.now() + (budget?.timeoutMs ?? 0);
    const client = await this.deps.session.client();
    if (budget && budgetAborted(budget)) return null;
    const semaphorePath = zkSemaphorePath(this.deps.basePath, request.key);
    const prefix = nodePrefix(request);
    const sentAt = Date.now();
    let path: string;
    try {
      path = await createContender(client, { base: this.deps.basePath, lockPath: semaphorePath, prefix, restrict: this.deps.restrict }, request.owner, this.deps.orphans, this.deps.name);
      budget?.serverAnswered?.();
    } catch (error) {
      // Refused (NOAUTH): the create did not happen, and would be refused again.
      const denied = this.deps.permissionDenied(error, 'acquire', request.key);
      if (denied) throw denied;
      // Our last create may have happened server-side: whatever carries our prefix must go.
      this.deps.orphans.adopt(semaphorePath, prefix);
      throw error;
    }
    const node: PermitNode = { path, key: request.key, listeners: new Set() };
    this.nodes.set(request.owner, node);
    const name = path.slice(semaphorePath.length + 1);
    try {
      for (;;) {
        let changed: () => void = () => undefined;
        const childrenChanged = new Promise<void>((resolve) => (changed = resolve));
        // One-shot watch, set again with each listing: any change of the queue means "look again".
        const children = budget ? await client.w_get_children(semaphorePath, () => changed()) : await client.get_children(semaphorePath, false);
        const standing = standingOf(request, name, children);
        if (standing.kind === 'holds') {
          // Our node is watched from here on (its stat is the token): the holder is told at once when an
          // operator or a bug deletes it and the next waiter is let in, not at the next extension.
          const stat = await client.w_exists(path, (type: number) => {
            if (type === ZK_DELETED_EVENT) this.lost(request.owner, node, 'removed');
          });
          if (!stat) throw new Error(`our node ${path} is gone (session expired?)`);
          // Given back meanwhile (close()): nothing to arm, nothing held.
          if (this.nodes.get(request.owner) !== node) return null;
          const expiresAt = leaseExpiry(budget ? Date.now() : sentAt, request.ttlMs);
          this.armLease(request.owner, node, expiresAt);
          this.watchSession(request.owner, node, client);
          return permitGrantOf(request, Number(stat.czxid), expiresAt);
        }
        if (standing.kind === 'mismatch') {
          await this.leave(request.owner);
          throw new PermitsMismatchError(request.key, this.deps.name, request.permits, standing.actual);
        }
        if (standing.kind === 'gone' || !budget || !(await waitForWake(budget, deadline, (wake) => void childrenChanged.then(wake)))) {
          await this.leave(request.owner);
          return null;
        }
      }
    } catch (error) {
      await this.leave(request.owner).catch(() => undefined);
      throw this.deps.permissionDenied(error, 'acquire', request.key) ?? error;
    }
  }

  /** Told when the permit is lost: its lease ends unextended here (before its node goes), its node is deleted, its session ends. */
  onLeaseLost(lease: PermitGrant, listener: LeaseLostListener): () => void {
    const node = this.nodes.get(lease.owner);
    node?.listeners.add(listener);
    return () => node?.listeners.delete(listener);
  }

  /**
   * A lease that runs out unextended gives its place back, as a crashed holder's session would. The holder
   * is told first: the node's deletion is what lets the next waiter in.
   */
  private armLease(owner: string, node: PermitNode, expiresAt: number): void {
    clearTimeout(node.timer);
    node.timer = setTimeout(() => {
      if (this.nodes.get(owner) !== node) return;
      for (const listener of [...node.listeners]) listener('expired');
      void this.leave(owner).catch(() => undefined);
    }, Math.max(0, expiresAt - Date.now()));
    node.timer.unref?.();
  }

  /**
   * The session the permit's node lives on ended: the node is gone with it (or will be), and others may
   * hold the place already. Given up after a cut rather than expired, the server may keep the session a
   * while longer: the node is then deleted from a new session, or by the orphan sweeper later.
   */
  private watchSession(owner: string, node: PermitNode, client: ZooKeeperLockClient): void {
    node.stopWatchingSession = this.deps.session.onExpired((end) => {
      if (!this.lost(owner, node, 'session-ended')) return;
      if (end === 'given-up') void this.deleteNode(node).catch(() => false);
    }, client);
  }

  /** Tells the holder its permit is lost and forgets it; false when it was no longer held (given back, lost before). */
  private lost(owner: string, node: PermitNode, reason: 'removed' | 'session-ended'): boolean {
    if (this.nodes.get(owner) !== node) return false;
    const listeners = [...node.listeners];
    this.forget(owner);
    for (const listener of listeners) listener(reason);
    return true;
  }

  private forget(owner: string): PermitNode | undefined {
    const node = this.nodes.get(owner);
    this.nodes.delete(owner);
    if (node) {
      clearTimeout(node.timer);
      node.stopWatchingSession?.();
    }
    return node;
  }

  /** Deletes our node, which wakes the waiters behind it; resolves false when it was already gone. */
  private async leave(owner: string): Promise<boolean> {
    const node = this.forget(owner);
    return node ? this.deleteNode(node) : false;
  }

  /** Deletes a node; one whose answer was lost with the connection is left to the orphan sweeper (the error still surfaces). */
  private async deleteNode({ path, key }: PermitNode): Promise<boolean> {
    try {
      const client = await this.deps.session.client();
      await client.delete_(path, -1);
      return true;
    } catch (error) {
      if (zkErrorCode(error) === ZK_ERRORS.NO_NODE) return false;
      const denied = this.deps.permissionDenied(error, 'release', key);
      if (denied) throw denied;
      const parent = path.lastIndexOf('/');
      this.deps.orphans.adopt(path.slice(0, parent), path.slice(parent + 1));
      throw error;
    }
  }
}
