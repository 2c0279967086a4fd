import { randomUUID } from 'node:crypto';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import { PermitsMismatchError } from '../../errors/permits-mismatch.error';
import { leaseExpiry } from '../../locking/lease-expiry';
import type { PermitGrant, PermitRequest, WaitBudget } from '../../locking/lock-lease';
import type { LeaseLostListener, SemaphoreStrategy } from '../../locking/lock-strategy.interface';
import { permitGrantOf } from '../../locking/permit-grant';
import { budgetAborted, waitForWake } from '../../locking/wait-for-wake';
import { ZK_DELETED_EVENT, ZK_ERRORS, zkErrorCode, type ZooKeeperLockClient } from './zookeeper-client.type';
import { createContender, listAroundCreate } from './zookeeper-lock.recipe';
import type { ZooKeeperOrphans } from './zookeeper-orphans';
import { zkSemaphorePath, zkSequence } from './zookeeper-paths';
import { clearForResize, permitNodeSize, permitNodeWeight, readSemaphoreRecord, semaphoreSize } from './zookeeper-semaphore-size';
import type { ZooKeeperSession } from './zookeeper-session';
import { onOperatorSession } from './zookeeper-operator-session';
import { inspectZooKeeperSemaphore } from './zookeeper-semaphore-inspection';
import type { SemaphoreInspection } from '../../locking/lock-query';

/**
 * What the semaphore shares with its strategy: the session (its client, its end), the orphan sweeper, the
 * base path, and its identity's rules: whether the nodes it creates get the creator-only ACL (`digestAuth`),
 * and the typed error for a refusal.
 */
export interface ZooKeeperSemaphoreDeps {
  readonly name: string;
  readonly basePath: string;
  readonly session: Pick<ZooKeeperSession, 'client' | 'clientWithin' | 'onExpired' | 'isAlive' | 'endedBy'>;
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
  /** The client of the session the node lives on. */
  readonly client: ZooKeeperLockClient;
  timer?: NodeJS.Timeout;
  stopWatchingSession?: () => void;
  /** Told when the permit is lost: its lease ends here, its node is deleted, its session ends. */
  readonly listeners: Set<LeaseLostListener>;
}

/** Where a request stands in its semaphore's queue. */
type Standing = 'holds' | 'waits' | 'gone';

/** How an attempt that did not end the acquisition ended: it is made again. */
type Again =
  /** The session it was made on ended under it (expired while the process was frozen, or given up). */
  | { readonly again: 'session-ended' }
  /** The semaphore had another size but nobody held or waited for it: its node was cleared (or tried) to make it ours. */
  | { readonly again: 'resize'; readonly actual: number };

/** A caller of another size clears an idle semaphore's node this many times at most before it is refused. */
const MAX_RESIZES = 5;

/** A permit node's name: protection id, the semaphore's size and the permit's weight, then ZooKeeper's sequence. */
const nodePrefix = (request: PermitRequest): string => `_p_${randomUUID()}-p${request.permits}-w${request.weight}-`;

/**
 * Whether our node `ownName` holds: the children are the semaphore's queue in sequence order, and a node
 * holds when the weights of the nodes before it and its own fit in `permits` (the holders are the head of
 * the queue; no waiter overtakes one ahead of it). Only nodes of the semaphore's size count: a node of
 * another size is a caller being refused, on its way out, and never holds.
 */
function standingOf(request: PermitRequest, ownName: string, children: readonly string[]): Standing {
  const sorted = children.filter((name) => permitNodeSize(name) === request.permits).sort((a, b) => zkSequence(a) - zkSequence(b));
  const index = sorted.indexOf(ownName);
  if (index < 0) return 'gone';
  const used = sorted.slice(0, index).reduce((sum, name) => sum + permitNodeWeight(name), 0);
  return used + request.weight <= request.permits ? 'holds' : 'waits';
}

/**
 * Counting semaphores in ZooKeeper, for `ZooKeeperLockStrategy`, after Curator's InterProcessSemaphoreV2:
 * every acquisition creates an ephemeral sequential node under the semaphore's node (its size and weight in
 * its name), and the head of the queue whose weights fit in `permits` holds: FIFO. A waiter watches the
 * children (any node ahead leaving may let it in, not only the one N ahead). The permit's lease is the
 * node: gone with the holder's session, and deleted here when the lease runs out unextended, as the
 * lock's. The fencing token is the node's czxid, in the order of the grants.
 *
 * The size: the semaphore's node records it, set by the caller that creates the node, the semaphore's
 * first holder (see semaphoreSize); it stays while anyone holds or waits. A caller of another size is
 * refused (`PermitsMismatchError`) and leaves; nobody else counts its node, so nobody is disturbed. Once
 * the semaphore is idle, a caller of another size clears its node (a versioned delete, which ZooKeeper
 * refuses while it has children) and makes it again with its own size.
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

  /** The semaphore's size, holders and waiters: its node's children, in order, with their data (see inspectZooKeeperSemaphore). */
  async inspect(key: string): Promise<SemaphoreInspection> {
    const path = zkSemaphorePath(this.deps.basePath, key);
    return onOperatorSession(this.deps.session, this.deps.permissionDenied, 'queryPermits', key, (client) => inspectZooKeeperSemaphore(client, path));
  }

  acquire(request: PermitRequest, budget: WaitBudget): Promise<PermitGrant | null> {
    return this.take(request, budget);
  }

  async extend(lease: PermitGrant, ttlMs: number): Promise<PermitGrant | null> {
    const node = this.nodes.get(lease.owner);
    // A session the server may have expired (the process was frozen past it) took the permit with it.
    if (!node || !this.deps.session.isAlive(node.client)) return null;
    const sentAt = Date.now();
    const client = await this.deps.session.client();
    let stillThere: boolean;
    try {
      stillThere = Boolean(await client.exists(node.path, false));
    } catch (error) {
      // The session ended under the call: the permit went with it (its holder is told as the session ends).
      if (this.deps.session.endedBy(client, error) && this.nodes.get(lease.owner) !== node) return null;
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
    const node = this.nodes.get(lease.owner);
    // The permit's session is gone, and the permit with it: said now (see ZooKeeperLockStrategy.release).
    if (!node || !this.deps.session.isAlive(node.client)) return false;
    return this.leave(lease.owner);
  }

  /** The permit's session checked on the monotonic clock, with no call to the server (see ZooKeeperLockStrategy.checkLease). */
  checkLease(lease: PermitGrant): void {
    const node = this.nodes.get(lease.owner);
    if (node) this.deps.session.isAlive(node.client);
  }

  /** Gives back every permit of this strategy (its close; the session's end would too). */
  async close(): Promise<void> {
    await Promise.all([...this.nodes.keys()].map((owner) => this.leave(owner).catch(() => false)));
  }

  /**
   * One acquisition: an attempt on the session open now, made again on a new session when that one ends
   * under it (its node is gone with it, or deleted; the waiter queues again, within its wait; a try, once),
   * and again after clearing an idle semaphore of another size.
   */
  private async take(request: PermitRequest, budget: WaitBudget | undefined): Promise<PermitGrant | null> {
    const deadline = Date.now() + (budget?.timeoutMs ?? 0);
    let sessionsEnded = 0;
    for (let resizes = 0; ; ) {
      const client = await this.deps.session.clientWithin(budget);
      if (!client || (budget && budgetAborted(budget))) return null;
      let outcome: PermitGrant | null | Again;
      try {
        outcome = await this.attempt(client, request, budget, deadline, resizes < MAX_RESIZES);
      } catch (error) {
        if (error instanceof PermitsMismatchError || !this.deps.session.endedBy(client, error)) throw error;
        outcome = { again: 'session-ended' };
      }
      if (outcome === null || !('again' in outcome)) return outcome;
      if (outcome.again === 'resize') {
        resizes += 1;
        // Someone joined as we cleared it, or was on the way out: a short pause before looking again.
        await new Promise((resolve) => setTimeout(resolve, 10 * resizes));
      } else {
        sessionsEnded += 1;
        if (!budget && sessionsEnded > 1) throw new LockBackendUnavailableError(this.deps.name, 'acquire a permit (its session ended under it twice)', 0, { key: request.key });
      }
      if (budget && (budgetAborted(budget) || Date.now() >= deadline)) return null;
    }
  }

  /** One attempt on `client`'s session. */
  private async attempt(client: ZooKeeperLockClient, request: PermitRequest, budget: WaitBudget | undefined, deadline: number, mayResize: boolean): Promise<PermitGrant | null | Again> {
    const semaphorePath = zkSemaphorePath(this.deps.basePath, request.key);
    const prefix = nodePrefix(request);
    const sentAt = Date.now();
    const creating = createContender(
      client,
      { base: this.deps.basePath, lockPath: semaphorePath, prefix, restrict: this.deps.restrict, lockData: String(request.permits) },
      request.owner,
      this.deps.orphans,
      this.deps.name,
    );
    // Sent right behind the create, on the same session (answered in order): the size the semaphore's node
    // records and the queue, as they are once our node is in it, in the same round trip.
    const firstRecord = readSemaphoreRecord(client, semaphorePath).catch(() => undefined);
    const firstLook = listAroundCreate(client, semaphorePath);
    let path: string;
    try {
      path = await creating;
      budget?.serverAnswered?.();
    } catch (error) {
      // Refused (NOAUTH): the create did not happen, and would be refused again.
      const denied = this.deps.permissionDenied(error, 'acquire', request.key);
      if (denied) throw denied;
      // Our last create may have happened server-side: whatever carries our prefix must go.
      this.deps.orphans.adopt(semaphorePath, prefix);
      throw error;
    }
    const node: PermitNode = { path, key: request.key, client, listeners: new Set() };
    this.nodes.set(request.owner, node);
    const name = path.slice(semaphorePath.length + 1);
    let stopWatchingSession: () => void = () => undefined;
    try {
      let record = await firstRecord;
      let children = (await firstLook)?.children;
      // Read before our node was made (a create tried again): read again, now that our node keeps the
      // semaphore's node as it is (see semaphoreSize).
      if (!record || !children?.includes(name)) {
        record = await readSemaphoreRecord(client, semaphorePath);
        children = await client.get_children(semaphorePath, false);
      }
      const size = semaphoreSize(record, children) ?? request.permits;
      if (size !== request.permits) {
        // Not ours to join: we leave, and nobody else counted our node. Refused while anyone of that size
        // holds or waits; an idle semaphore is cleared, to be made again with our size.
        await this.leave(request.owner);
        const inUse = children.some((child) => child !== name && permitNodeSize(child) === size);
        if (inUse || !mayResize) throw new PermitsMismatchError(request.key, this.deps.name, request.permits, size);
        await clearForResize(client, semaphorePath, record);
        return { again: 'resize', actual: size };
      }
      // The session ending wakes a wait: no watch of ours fires then (the client drops them all).
      const sessionGone = new Promise<void>((resolve) => (stopWatchingSession = this.deps.session.onExpired(() => resolve(), client)));
      for (let round = 0; ; round += 1) {
        let changed: () => void = () => undefined;
        const childrenChanged = new Promise<void>((resolve) => (changed = resolve));
        const watcher = (): void => changed();
        // One-shot watch, set again with each listing: any change of the queue means "look again".
        if (round > 0) children = await client.w_get_children(semaphorePath, watcher);
        if (!this.deps.session.isAlive(client)) return await this.sessionEnded(request.owner);
        const standing = standingOf(request, name, children);
        if (standing === 'holds') {
          // Our node is watched from here on (its stat is the token): the holder is told at once when an
          // operator or a bug deletes it and the next waiter is let in, not at the next extension.
          const stat = await client.w_exists(path, (type: number) => {
            // Deleted with its session (read on waking from a stall, before the session's own end):
            // checking the session tells the holder that instead.
            if (type === ZK_DELETED_EVENT && this.deps.session.isAlive(client)) this.lost(request.owner, node, 'removed');
          });
          if (!stat) throw new Error(`our node ${path} is gone (session expired?)`);
          // Given back meanwhile (close()): nothing to arm, nothing held.
          if (this.nodes.get(request.owner) !== node) return null;
          if (!this.deps.session.isAlive(client)) return await this.sessionEnded(request.owner);
          const expiresAt = leaseExpiry(budget ? Date.now() : sentAt, request.ttlMs);
          this.armLease(request.owner, node, expiresAt);
          this.watchSession(request.owner, node, client);
          return permitGrantOf(request, Number(stat.czxid), expiresAt);
        }
        if (standing === 'gone' || !budget) {
          if (!this.deps.session.isAlive(client)) return await this.sessionEnded(request.owner);
          await this.leave(request.owner);
          return null;
        }
        // The first look set no watch: set it with a listing before waiting.
        if (round === 0) continue;
        const woken = await waitForWake(budget, deadline, (wake) => {
          void childrenChanged.then(wake);
          void sessionGone.then(wake);
        });
        // Ended without the event (timeout, abort, the session): the watch no longer calls us.
        client.unwatch(semaphorePath, watcher);
        if (!this.deps.session.isAlive(client)) return await this.sessionEnded(request.owner);
        if (!woken) {
          await this.leave(request.owner);
          return null;
        }
      }
    } catch (error) {
      await this.leave(request.owner).catch(() => undefined);
      throw this.deps.permissionDenied(error, 'acquire', request.key) ?? error;
    } finally {
      stopWatchingSession();
    }
  }

  /**
   * The session of an attempt ended under it: its node went with it or (a session given up here) may live
   * on until the server expires it: it is deleted from the new session first, then the attempt is made again.
   */
  private async sessionEnded(owner: string): Promise<Again> {
    await this.leave(owner).catch(() => false);
    return { again: 'session-ended' };
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
      for (let attempt = 0; ; attempt += 1) {
        const client = await this.deps.session.client();
        try {
          await client.delete_(path, -1);
          return true;
        } catch (error) {
          // The session ended under the call: asked again on a new session (see ZooKeeperLockStrategy.deleteNode).
          if (attempt === 0 && this.deps.session.endedBy(client, error)) continue;
          throw error;
        }
      }
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
