import { leaseExpiry } from '../../locking/lease-expiry';
import type { LockRequest } from '../../locking/lock-lease';
import type { LeaseLostListener } from '../../locking/lock-strategy.interface';
import type { SameProcessLine } from '../same-process-line';
import { wasBroken } from './zookeeper-break-record';
import { ZK_DATA_CHANGED_EVENT, ZK_DELETED_EVENT, ZK_ERRORS, zkErrorCode, type ZooKeeperLockClient } from './zookeeper-client.type';
import type { ZooKeeperSession } from './zookeeper-session';

/** A lock this process holds: its node, the session it lives on, its lease, who hears of its loss. */
export interface HeldNode {
  readonly path: string;
  /** The client of the session the node lives on. */
  readonly client: ZooKeeperLockClient;
  timer: NodeJS.Timeout | undefined;
  /** Arms the watch on our node, for a lock that was free (see OWN_WATCH_DELAY_MS). */
  watchTimer?: NodeJS.Timeout;
  readonly listeners: Set<LeaseLostListener>;
  readonly stopWatchingSession: () => void;
  /** The zxid that granted the node, and how many times the hold was passed on since (its fencing token). */
  readonly zxid: number;
  readonly pass: number;
  /** The node's data version as our last write left it: a higher one is a break's mark. */
  readonly version: number;
  /** A pass to another owner is on its way: the data change it makes is ours, not a break's mark. */
  passing: boolean;
}

/** Where a hold stands on its node: the zxid that granted it, its passes since, the node's data version. */
export interface HoldPosition {
  readonly zxid: number;
  readonly pass: number;
  readonly version: number;
}

/**
 * A lock that was free is held without a watch on our node for this long, then the watch is set. The
 * watch costs one more call to the server (with this client about as much as a create: its own packet,
 * its own answer through the client's threads), and most critical sections end sooner: an uncontended
 * lock costs a create, the listing sent with it, and a delete. A node deleted behind the holder's back
 * within this time is still reported: when the watch is set (it finds the node gone), or at the release,
 * which finds nothing to delete.
 */
const OWN_WATCH_DELAY_MS = 50;

/** How long a holder whose node was found gone waits to read its lock node's break record before it is told "removed". */
const BREAK_RECORD_READ_MS = 1_000;

/** Between tries to set that watch when the connection dropped (the pace of the delete retries). */
const OWN_WATCH_RETRY_MS = 250;

/**
 * The locks the ZooKeeper strategy holds, by owner, and how each one ends: released (forgotten first), its
 * lease run out unextended (given up here, as a crashed holder's session would be), its session expired or
 * given up, or its node deleted behind the holder's back. Every way but the release tells the holder.
 */
export class ZooKeeperHeldNodes {
  private readonly nodes = new Map<string, HeldNode>();

  constructor(
    private readonly session: ZooKeeperSession,
    /** The writers of this process in ZooKeeper's lines: a lock that ends leaves it. */
    private readonly line: SameProcessLine<Promise<boolean>>,
    /** Deletes a node (see the strategy's `deleteNode`): the lease's end and a given-up session use it. */
    private readonly deleteNode: (path: string) => Promise<boolean>,
  ) {}

  get size(): number {
    return this.nodes.size;
  }

  get(owner: string): HeldNode | undefined {
    return this.nodes.get(owner);
  }

  entries(): Array<[string, HeldNode]> {
    return [...this.nodes.entries()];
  }

  /**
   * Holds `path` for `request.owner` at `position`, its lease counted from `grantedAt`; `watchLater`: see
   * OWN_WATCH_DELAY_MS.
   */
  hold(request: LockRequest, client: ZooKeeperLockClient, path: string, position: HoldPosition, grantedAt: number, watchLater: boolean): { node: HeldNode; expiresAt: number } {
    const node: HeldNode = {
      path,
      client,
      timer: undefined,
      listeners: new Set(),
      ...position,
      passing: false,
      // The session our node lives on, the one `client` belongs to.
      stopWatchingSession: this.session.onExpired((end) => {
        const listeners = [...node.listeners];
        this.forget(request.owner);
        this.line.leave(path);
        for (const listener of listeners) listener('session-ended');
        // Given up after a cut (not expired): the server may still keep the session, and our node, until it
        // expires there; a reconnect would no longer bring it back (its handle is closed). The holder was
        // told it lost the lock, so the node must not keep holding it: it is deleted now from a new
        // session, or by the orphan sweeper once the ensemble answers again (any failure is routed there).
        if (end === 'given-up') void this.deleteNode(path).catch(() => false);
      }, client),
    };
    this.nodes.set(request.owner, node);
    const expiresAt = leaseExpiry(grantedAt, request.ttlMs);
    this.armLease(request.owner, node, expiresAt);
    if (watchLater) {
      node.watchTimer = setTimeout(() => this.watchOwnNode(client, request.owner, path), OWN_WATCH_DELAY_MS);
      node.watchTimer.unref?.();
    }
    return { node, expiresAt };
  }

  /**
   * A lease that runs out unextended is given up here, as a crashed holder's session would be. Only for the
   * hold `owner` has now, and not while it is being passed on: an extension answered after its hold was
   * passed or released must not end the node (held by the next owner) at the old lease's end.
   */
  armLease(owner: string, node: HeldNode, expiresAt: number): void {
    if (this.nodes.get(owner) !== node || node.passing) return;
    clearTimeout(node.timer);
    node.timer = setTimeout(() => {
      if (this.nodes.get(owner) !== node) return;
      const listeners = [...node.listeners];
      this.forget(owner);
      // Told before the node goes: its deletion is what lets the next in line in.
      for (const listener of listeners) listener('expired');
      void this.deleteNode(node.path).catch(() => false);
    }, Math.max(0, expiresAt - Date.now()));
    node.timer.unref?.();
  }

  /**
   * The hold of `owner` is being passed on (see passHold): its lease no longer runs out, and the data change
   * the pass makes is not a break's mark. The pass then forgets it, whether it succeeded or not.
   */
  startPassing(node: HeldNode): void {
    node.passing = true;
    clearTimeout(node.timer);
  }

  forget(owner: string): void {
    const node = this.nodes.get(owner);
    if (!node) return;
    this.nodes.delete(owner);
    clearTimeout(node.timer);
    clearTimeout(node.watchTimer);
    node.stopWatchingSession();
  }

  /**
   * An event of the watch on our node, while we hold it (our own release forgets the node first): deleted
   * behind our back ("removed"), or its data changed, which a break's mark does ("broken": a break marks the
   * node before deleting it), or our own pass to another owner (not an end: the new owner watches the node
   * anew). Told at once, with no call.
   */
  ownNodeEvent(owner: string, path: string, type: number): void {
    if (this.endedWithSession(owner) || this.nodes.get(owner)?.passing) return;
    if (type === ZK_DELETED_EVENT) this.nodeEnded(owner, path, 'removed');
    else if (type === ZK_DATA_CHANGED_EVENT) this.nodeEnded(owner, path, 'broken');
  }

  private nodeEnded(owner: string, path: string, end: 'broken' | 'removed'): void {
    const listeners = this.end(owner, path);
    for (const listener of listeners ?? []) listener(end);
  }

  /**
   * Our node was found gone when its watch was set (a lock that was free is watched late): a break that
   * came in between wrote the node's name into its lock node's record first, so that record tells (one read,
   * bounded by BREAK_RECORD_READ_MS; "removed" when it cannot be read in time).
   */
  private nodeFoundGone(owner: string, path: string): void {
    if (this.endedWithSession(owner)) return;
    const node = this.nodes.get(owner);
    const listeners = this.end(owner, path);
    if (!node || !listeners) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), BREAK_RECORD_READ_MS);
      timer.unref?.();
    });
    void Promise.race([wasBroken(node.client, path), late]).then((broken) => {
      clearTimeout(timer);
      for (const listener of listeners) listener(broken ? 'broken' : 'removed');
    });
  }

  /**
   * Whether `owner`'s node went with its session: a process that wakes from a stall past its session can
   * read the server's deletion of its node (sent before the server closed the connection) before any timer
   * of the session runs. The session's end is the news then: checking it tells the holder "session-ended".
   */
  private endedWithSession(owner: string): boolean {
    const node = this.nodes.get(owner);
    return node !== undefined && !this.session.isAlive(node.client);
  }

  /** Forgets our hold of `path`, if it is still `owner`'s: resolves who must hear of its end. */
  private end(owner: string, path: string): LeaseLostListener[] | undefined {
    const node = this.nodes.get(owner);
    if (node?.path !== path) return undefined;
    const listeners = [...node.listeners];
    this.forget(owner);
    this.line.leave(path);
    return listeners;
  }

  /** The watch on our node of a lock that was free, set late (see OWN_WATCH_DELAY_MS) unless released by then. */
  private watchOwnNode(client: ZooKeeperLockClient, owner: string, path: string): void {
    if (this.nodes.get(owner)?.path !== path) return;
    client
      .w_exists(path, (type: number) => this.ownNodeEvent(owner, path, type))
      .then((stat) => {
        // Marked by a break before the watch was set (its delete is on its way): a write that is not ours.
        const node = this.nodes.get(owner);
        if (node?.path === path && stat.version > node.version) this.nodeEnded(owner, path, 'broken');
      })
      .catch((error: unknown) => {
        // Gone already: deleted behind our back.
        if (zkErrorCode(error) === ZK_ERRORS.NO_NODE) return this.nodeFoundGone(owner, path);
        // Otherwise the connection dropped: the session, and our node, may well live on (an expiry is
        // reported by the session). The watch is tried again for as long as we hold the lock.
        const node = this.nodes.get(owner);
        if (node?.path !== path) return;
        node.watchTimer = setTimeout(() => this.watchOwnNode(client, owner, path), OWN_WATCH_RETRY_MS);
        node.watchTimer.unref?.();
      });
  }
}
