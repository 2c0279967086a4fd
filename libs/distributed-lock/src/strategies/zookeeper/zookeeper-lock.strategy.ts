import { randomUUID } from 'node:crypto';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import { leaseExpiry } from '../../locking/lease-expiry';
import type { LeaseGrant, LockRequest, WaitBudget } from '../../locking/lock-lease';
import { assertDuration, assertKnownKeys, describe } from '../../locking/lock-options';
import type { LeaseLostListener, LockStrategy, LockStrategyCapabilities } from '../../locking/lock-strategy.interface';
import { ZK_DELETED_EVENT, ZK_ERRORS, zkErrorCode, type ZooKeeperLockClient } from './zookeeper-client.type';
import { blockerAmong, blockerOf, createContender, listRightAfterCreate, tokenFromFirstLook, waitForDeletion } from './zookeeper-lock.recipe';
import { zkPermissionDenied } from './zookeeper-acl';
import { ZooKeeperOrphans } from './zookeeper-orphans';
import { zkContenderPrefix, zkLockPath } from './zookeeper-paths';
import { ZooKeeperSemaphore } from './zookeeper-semaphore';
import { ZooKeeperSession, type ZooKeeperConnectionOptions } from './zookeeper-session';
import { strategyName } from '../strategy-name';
import { assertFastPaths } from '../fast-paths-option';
import { budgetAborted } from '../../locking/wait-for-wake';
import { SameProcessLine } from '../same-process-line';

/** Options of the ZooKeeper strategy. */
export interface ZooKeeperLockStrategyOptions extends ZooKeeperConnectionOptions {
  /** Name in messages and events. Default "zookeeper". */
  readonly name?: string;
  /** Parent znode of every lock. Default "/dlock". */
  readonly basePath?: string;
  /** How long to wait for a session to open, in ms. Default 10 000. */
  readonly connectTimeout?: number;
}

/** A ZooKeeper grant: our ephemeral sequential node and its creation zxid (the fencing token). */
export interface ZooKeeperLeaseGrant extends LeaseGrant {
  readonly znode: string;
}

interface HeldNode {
  readonly path: string;
  /** The client of the session the node lives on. */
  readonly client: ZooKeeperLockClient;
  timer: NodeJS.Timeout | undefined;
  /** Arms the watch on our node, for a lock that was free (see OWN_WATCH_DELAY_MS). */
  watchTimer?: NodeJS.Timeout;
  readonly listeners: Set<LeaseLostListener>;
  readonly stopWatchingSession: () => void;
}

/** How an attempt ended when the session it was made on ended under it: it is made again on a new one. */
const SESSION_ENDED = Symbol('session ended');

const OPTION_KEYS = ['connect', 'sessionTimeout', 'digestAuth', 'fastPaths', 'name', 'basePath', 'connectTimeout'];

/**
 * How long a writer waits behind a writer of this process before it lists the children again: the bound
 * on noticing a node deleted behind both their backs that the one ahead did not report.
 */
const LOCAL_RECHECK_MS = 500;

/**
 * A lock that was free is held without a watch on our node for this long, then the watch is set. The
 * watch costs one more call to the server (with this client about as much as a create: its own packet,
 * its own answer through the client's threads), and most critical sections end sooner: an uncontended
 * lock costs a create, the listing sent with it, and a delete. A node deleted behind the holder's back
 * within this time is still reported: when the watch is set (it finds the node gone), or at the release,
 * which finds nothing to delete.
 */
const OWN_WATCH_DELAY_MS = 50;

/** Between tries to set that watch when the connection dropped (the pace of the delete retries). */
const OWN_WATCH_RETRY_MS = 250;

/**
 * ZooKeeper's lock recipe, as Curator's InterProcessMutex implements it: each attempt creates an ephemeral
 * sequential node under the lock's node; the lowest holds; each waiter watches only its predecessor (no
 * herd effect, FIFO by construction; between two writers of this process the release tells the next one
 * directly, sparing it a children listing). Nodes are "protected" (found again after a lost create), lock nodes
 * are container nodes (removed by the server once empty), readers of a read-write lock wait only for
 * writers ahead of them. The fencing token is a zxid: our node's creation zxid, or when our first look
 * shows our node alone, the lock node's pzxid (see tokenFromFirstLook); strictly increasing from holder
 * to holder, also when the lock node is deleted and created again.
 *
 * Sessions: a lost connection is "unknown" at first (the session and our nodes may still live; the client
 * reconnects). An expired session loses every lock held on it: their signals abort. So does a session cut
 * off from the ensemble for as long as the server may take to expire it (see ZooKeeperSession): it is
 * given up before the server could let another holder in, and the nodes of its locks are deleted from a
 * new session. So does a session the server may have expired while the process was frozen: a holder reads
 * its lock lost at its first look after waking (`checkLease`), its release resolves false. A waiter whose
 * session ends queues again on a new session, within its wait. A holder's lease is also enforced here: a
 * lock that is not extended by its end is deleted, like a crashed holder's session.
 */
export class ZooKeeperLockStrategy implements LockStrategy {
  readonly name: string;
  readonly capabilities: LockStrategyCapabilities = Object.freeze({
    fencing: true,
    fifo: true,
    sharedLocks: true,
    crossProcess: true,
    semaphores: Object.freeze({ fifo: true, fencing: true }),
  });
  readonly signalsServerAnswer = true;
  /** Counting semaphores (`LockService.acquirePermit`): Curator's SemaphoreV2 with ephemeral nodes, FIFO, fenced by czxid. */
  readonly semaphore: ZooKeeperSemaphore;
  private readonly session: ZooKeeperSession;
  private readonly basePath: string;
  private readonly held = new Map<string, HeldNode>();
  /** Nodes we meant to delete, or may have created, when the connection was lost: deleted again later. */
  private readonly orphans: ZooKeeperOrphans;
  /**
   * Writers of this process in the lines of ZooKeeper, by node path. A release tells the writer right
   * behind with its delete (resolves true once the server applied it).
   */
  private readonly line = new SameProcessLine<Promise<boolean>>();
  /** Protection prefixes of our writers whose create is on its way (see `waitFor`). */
  private readonly writersCreating = new Set<string>();
  /** Acquisitions waiting in a line now: a session cut off meanwhile is given up for them too (they queue again). */
  private waiters = 0;
  /**
   * The digest user the session authenticates as (the part of `digestAuth` before ":"; never the
   * password), for messages. Defined exactly when the nodes we create get the creator-only ACL.
   */
  private readonly digestUser: string | undefined;

  constructor(options: ZooKeeperLockStrategyOptions) {
    const raw: unknown = options;
    assertKnownKeys(raw, OPTION_KEYS, 'ZooKeeperLockStrategy options');
    if (typeof options.connect !== 'string' || !/^[^\s,]+:\d+(,[^\s,]+:\d+)*(\/[^\s]*)?$/.test(options.connect)) {
      throw new InvalidLockOptionsError('connect', `expected "host:port[,host:port…][/chroot]", got ${describe(options.connect)}.`);
    }
    this.name = strategyName(options.name, 'zookeeper');
    this.basePath = options.basePath ?? '/dlock';
    if (!/^(\/[\w.-]+)+$/.test(this.basePath)) throw new InvalidLockOptionsError('basePath', `expected an absolute znode path such as "/dlock", got ${describe(this.basePath)}.`);
    if (options.sessionTimeout !== undefined) assertDuration(options.sessionTimeout, 'sessionTimeout', 1_000);
    if (options.digestAuth !== undefined && (typeof options.digestAuth !== 'string' || !options.digestAuth.includes(':'))) {
      throw new InvalidLockOptionsError('digestAuth', 'expected "user:password".');
    }
    assertFastPaths(options.fastPaths);
    this.digestUser = options.digestAuth?.slice(0, options.digestAuth.indexOf(':'));
    this.session = new ZooKeeperSession(options, this.name, assertDuration(options.connectTimeout ?? 10_000, 'connectTimeout', 100), {
      holdsLocks: () => this.held.size > 0 || this.waiters > 0 || this.semaphore.holdsPermits(),
    });
    this.orphans = new ZooKeeperOrphans(this.session);
    this.semaphore = new ZooKeeperSemaphore({
      name: this.name,
      basePath: this.basePath,
      session: this.session,
      orphans: this.orphans,
      restrict: this.digestUser !== undefined,
      permissionDenied: (error, operation, key) => this.permissionDenied(error, operation, key),
    });
  }

  tryAcquire(request: LockRequest): Promise<LeaseGrant | null> {
    return this.lock(request, undefined);
  }

  acquire(request: LockRequest, budget: WaitBudget): Promise<LeaseGrant | null> {
    return this.lock(request, budget);
  }

  async extend(lease: LeaseGrant, ttlMs: number): Promise<LeaseGrant | null> {
    const node = this.held.get(lease.owner);
    // A session the server may have expired (the process was frozen past it) took the lock with it.
    if (!node || !this.session.isAlive(node.client)) return null;
    const sentAt = Date.now();
    const client = await this.session.client();
    try {
      await client.exists(node.path, false);
    } catch (error) {
      if (zkErrorCode(error) === ZK_ERRORS.NO_NODE) {
        this.forget(lease.owner);
        return null;
      }
      // The session ended under the call: the lock went with it (its holder is told as the session ends).
      if (this.session.endedBy(client, error) && this.held.get(lease.owner) !== node) return null;
      throw error;
    }
    const expiresAt = leaseExpiry(sentAt, ttlMs);
    this.armLease(lease.owner, node, expiresAt);
    return { ...lease, expiresAt };
  }

  async release(lease: LeaseGrant): Promise<boolean> {
    const node = this.held.get(lease.owner);
    // The lock's session is gone, and the lock with it: said now, rather than found out by a call to a
    // handle that is closing (its end deletes a node that a given-up session may still keep).
    if (!node || !this.session.isAlive(node.client)) return false;
    this.forget(lease.owner);
    const deletion = this.deleteNode(node.path);
    if (lease.mode === 'exclusive') this.line.release(node.path, deletion);
    return deletion;
  }

  onLeaseLost(lease: LeaseGrant, listener: LeaseLostListener): () => void {
    const node = this.held.get(lease.owner);
    node?.listeners.add(listener);
    return () => node?.listeners.delete(listener);
  }

  /**
   * The lock's session checked on the monotonic clock, with no call to the server: once the server may
   * have expired it (the process woke from a freeze longer than the session, before any timer ran), it is
   * ended here, and the holder is told now ('session-ended'), before it acts on the lock.
   */
  checkLease(lease: LeaseGrant): void {
    const node = this.held.get(lease.owner);
    if (node) this.session.isAlive(node.client);
  }

  async ping(): Promise<void> {
    const client = await this.session.client();
    try {
      await client.exists('/', false);
    } catch (error) {
      // Its session ended as it was asked (a process that woke from a freeze): asked again on a new one.
      if (!this.session.endedBy(client, error)) throw error;
      await (await this.session.client()).exists('/', false);
    }
  }

  async close(): Promise<void> {
    this.orphans.stop();
    await this.semaphore.close();
    await Promise.all([...this.held.entries()].map(async ([owner, node]) => {
      this.forget(owner);
      await this.deleteNode(node.path).catch(() => false);
    }));
    // Closing the session removes every ephemeral node of ours, orphans included.
    await this.session.close();
  }

  /**
   * One acquisition: an attempt on the session open now, made again on a new session when that one ends
   * under it (it expired while the process was frozen, or was given up): its node is gone with it, or
   * deleted, and the waiter queues again, within its wait; a try, once.
   */
  private async lock(request: LockRequest, budget: WaitBudget | undefined): Promise<ZooKeeperLeaseGrant | null> {
    const deadline = Date.now() + (budget?.timeoutMs ?? 0);
    if (budget) this.waiters += 1;
    try {
      for (let attempt = 0; ; attempt += 1) {
        const client = await this.session.client();
        // Given up while the session was being opened: no node to create, and none to clean up later.
        if (budget && budgetAborted(budget)) return null;
        let outcome: ZooKeeperLeaseGrant | null | typeof SESSION_ENDED;
        try {
          outcome = await this.attempt(client, request, budget, deadline);
        } catch (error) {
          if (!this.session.endedBy(client, error) || (!budget && attempt > 0)) throw error;
          outcome = SESSION_ENDED;
        }
        if (outcome !== SESSION_ENDED) return outcome;
        if (!budget && attempt > 0) throw new LockBackendUnavailableError(this.name, 'acquire (its session ended under it twice)', 0, { key: request.key });
        if (budget && (budgetAborted(budget) || Date.now() >= deadline)) return null;
      }
    } finally {
      if (budget) this.waiters -= 1;
    }
  }

  /** One attempt on `client`'s session; SESSION_ENDED when that session ended under it. */
  private async attempt(client: ZooKeeperLockClient, request: LockRequest, budget: WaitBudget | undefined, deadline: number): Promise<ZooKeeperLeaseGrant | null | typeof SESSION_ENDED> {
    const lockPath = zkLockPath(this.basePath, request.key);
    const sentAt = Date.now();
    // The lock node is created on demand: createContender makes it (and the base) when it is missing.
    const prefix = zkContenderPrefix(randomUUID(), request.mode);
    if (request.mode === 'exclusive') this.writersCreating.add(prefix);
    const creating = createContender(client, { base: this.basePath, lockPath, prefix, restrict: this.digestUser !== undefined }, request.owner, this.orphans, this.name);
    // Sent right behind the create, which createContender sent before its first await.
    const firstLook = listRightAfterCreate(client, lockPath);
    let path: string;
    try {
      path = await creating;
      budget?.serverAnswered?.();
    } catch (error) {
      // Refused (NOAUTH): the create did not happen, and would be refused again.
      const denied = this.permissionDenied(error, 'acquire', request.key);
      if (denied) throw denied;
      // Our last create may have happened server-side: whatever carries our prefix must go.
      this.orphans.adopt(lockPath, prefix);
      throw error;
    } finally {
      this.writersCreating.delete(prefix);
    }
    if (request.mode === 'exclusive') this.line.enter(path);
    const name = path.slice(lockPath.length + 1);
    try {
      // The first look was made with the create. Our node alone in it: we hold, and the lock node's
      // stat gives the token (see tokenFromFirstLook): one round trip for the whole acquisition.
      const look = await firstLook;
      const firstBlocker = look ? blockerAmong(look.children, lockPath, name, request.mode) : 'absent';
      const token = look && firstBlocker === undefined ? tokenFromFirstLook(look, name) : undefined;
      // Never granted on a session that ended meanwhile: the holder would not be told (it is not one yet).
      if (!this.session.isAlive(client)) return await this.sessionEnded(path);
      if (token !== undefined) {
        const { node, grant } = this.hold(request, client, path, token, sentAt);
        node.watchTimer = setTimeout(() => this.watchOwnNode(client, request.owner, path), OWN_WATCH_DELAY_MS);
        node.watchTimer.unref?.();
        return grant;
      }
      // Our node is watched: the watch tells the holder at once if an operator or a bug deletes its node,
      // instead of at the next extension. Its answer carries our czxid (the fencing token).
      let ownDeleted = false;
      const ownStat = client.w_exists(path, (type: number) => {
        if (type !== ZK_DELETED_EVENT) return;
        ownDeleted = true;
        this.nodeDeleted(request.owner, path);
      });
      ownStat.catch(() => undefined); // awaited below; a failure surfaces there
      // The session ending wakes the wait: no watch of ours fires then (the native client drops them all).
      let stopWatchingSession: () => void = () => undefined;
      const sessionGone = new Promise<void>((resolve) => (stopWatchingSession = this.session.onExpired(() => resolve(), client)));
      try {
        for (let round = 0; ; round += 1) {
          const blocker = round === 0 && firstBlocker !== 'absent' ? firstBlocker : await blockerOf(client, lockPath, name, request.mode, this.name);
          if (!blocker) break;
          if (!budget) {
            await this.deleteNode(path);
            return null;
          }
          const waited = await this.waitFor(client, blocker, request.mode, budget, deadline, sessionGone);
          if (!this.session.isAlive(client)) return await this.sessionEnded(path);
          if (waited === 'timeout') {
            await this.deleteNode(path);
            return null;
          }
        // The writer of this process holding the node just ahead of ours released. Once the server
        // applied that delete, nobody is ahead of us (sequential nodes are never created ahead of
        // existing ones), and our session, which carries our node too, was alive: we hold without
        // listing the children again.
          if (typeof waited === 'object' && (await waited.deletion.catch(() => false)) && !ownDeleted) break;
        }
      } finally {
        stopWatchingSession();
      }
      const stat = await ownStat;
      if (!this.session.isAlive(client)) return await this.sessionEnded(path);
      if (!stat) throw new LockBackendUnavailableError(this.name, `acquire (its node ${path} is gone: session expired?)`, Date.now() - sentAt, { key: request.key });
      // The lease is this process's own timer: it counts from the grant, not from before the wait.
      return this.hold(request, client, path, Number(stat.czxid), Date.now()).grant;
    } catch (error) {
      await this.deleteNode(path).catch(() => false);
      throw this.permissionDenied(error, 'acquire', request.key) ?? error;
    }
  }

  /**
   * The session of an attempt ended under it: its node went with the session, or (a session given up
   * here) may live on until the server expires it, ahead of the attempt made again: it is deleted first,
   * from the new session (or by the orphan sweeper, if that fails).
   */
  private async sessionEnded(path: string): Promise<typeof SESSION_ENDED> {
    await this.deleteNode(path).catch(() => false);
    return SESSION_ENDED;
  }

  /** The typed error for a NOAUTH answer (see zkPermissionDenied), undefined for any other. */
  private permissionDenied(error: unknown, operation: string, key?: string): Error | undefined {
    return zkPermissionDenied(error, { strategy: this.name, operation, basePath: this.basePath, user: this.digestUser, key });
  }

  /**
   * Waits until the blocker is gone, or may be: behind a writer of this process, here (it tells us of
   * its release with the delete, or to look again); behind any other, with a watch on its node (a
   * release of ours whose news reaches us first is taken too). Resolves with the release's delete when
   * told, 'look-again' when the children must be listed again (also when `sessionGone` resolves: the
   * session ended, which no watch reports).
   */
  private async waitFor(client: ZooKeeperLockClient, blocker: string, mode: LockRequest['mode'], budget: WaitBudget, deadline: number, sessionGone: Promise<void>): Promise<{ deletion: Promise<boolean> } | 'look-again' | 'timeout'> {
    if (mode !== 'exclusive') return (await waitForDeletion(client, blocker, budget, deadline, sessionGone)) ? 'look-again' : 'timeout';
    // A writer of ours whose create landed before ours but whose answer is still on its way is ours too:
    // it joins the line under that path once its answer is in.
    const name = blocker.slice(blocker.lastIndexOf('/') + 1);
    if (this.line.has(blocker) || [...this.writersCreating].some((prefix) => name.startsWith(prefix))) {
      const waited = await this.line.waitBehind(blocker, budget, deadline, LOCAL_RECHECK_MS);
      return waited.outcome === 'told' ? { deletion: waited.news } : waited.outcome;
    }
    let told: { deletion: Promise<boolean> } | undefined;
    let releasedHere: () => void = () => undefined;
    const handedOver = new Promise<void>((resolve) => (releasedHere = resolve));
    const stopListening = this.line.listen(blocker, (news) => {
      if (news) told = { deletion: news };
      releasedHere();
    });
    try {
      if (!(await waitForDeletion(client, blocker, budget, deadline, Promise.race([handedOver, sessionGone])))) return 'timeout';
      return told ?? 'look-again';
    } finally {
      stopListening();
    }
  }

  /** The watch on our node of a lock that was free, set late (see OWN_WATCH_DELAY_MS) unless released by then. */
  private watchOwnNode(client: ZooKeeperLockClient, owner: string, path: string): void {
    if (this.held.get(owner)?.path !== path) return;
    client
      .w_exists(path, (type: number) => {
        if (type === ZK_DELETED_EVENT) this.nodeDeleted(owner, path);
      })
      .catch((error: unknown) => {
        // Gone already: deleted behind our back.
        if (zkErrorCode(error) === ZK_ERRORS.NO_NODE) return this.nodeDeleted(owner, path);
        // Otherwise the connection dropped: the session, and our node, may well live on (an expiry is
        // reported by the session). The watch is tried again for as long as we hold the lock.
        const node = this.held.get(owner);
        if (node?.path !== path) return;
        node.watchTimer = setTimeout(() => this.watchOwnNode(client, owner, path), OWN_WATCH_RETRY_MS);
        node.watchTimer.unref?.();
      });
  }

  private hold(request: LockRequest, client: ZooKeeperLockClient, path: string, token: number, grantedAt: number): { node: HeldNode; grant: ZooKeeperLeaseGrant } {
    const node: HeldNode = {
      path,
      client,
      timer: undefined,
      listeners: new Set(),
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
    this.held.set(request.owner, node);
    const expiresAt = leaseExpiry(grantedAt, request.ttlMs);
    this.armLease(request.owner, node, expiresAt);
    return { node, grant: { key: request.key, owner: request.owner, mode: request.mode, fencingToken: token, expiresAt, znode: path } };
  }

  /** Our node vanished while we held it (not by our own release, which forgets the node first). */
  private nodeDeleted(owner: string, path: string): void {
    const node = this.held.get(owner);
    if (node?.path !== path) return;
    const listeners = [...node.listeners];
    this.forget(owner);
    this.line.leave(path);
    for (const listener of listeners) listener('removed');
  }

  /** A lease that runs out unextended is given up here, as a crashed holder's session would be. */
  private armLease(owner: string, node: HeldNode, expiresAt: number): void {
    clearTimeout(node.timer);
    node.timer = setTimeout(() => {
      const listeners = [...node.listeners];
      this.forget(owner);
      // Told before the node goes: its deletion is what lets the next in line in.
      for (const listener of listeners) listener('expired');
      void this.deleteNode(node.path).catch(() => false);
    }, Math.max(0, expiresAt - Date.now()));
    node.timer.unref?.();
  }

  private forget(owner: string): void {
    const node = this.held.get(owner);
    if (!node) return;
    this.held.delete(owner);
    clearTimeout(node.timer);
    clearTimeout(node.watchTimer);
    node.stopWatchingSession();
  }

  /**
   * Deletes a node; resolves false when it was already gone. When the answer is lost with the
   * connection, the node is handed to the orphan sweeper and deleted again later (the error still surfaces).
   */
  private async deleteNode(path: string): Promise<boolean> {
    try {
      for (let attempt = 0; ; attempt += 1) {
        const client = await this.session.client();
        try {
          await client.delete_(path, -1);
          return true;
        } catch (error) {
          // The session ended under the call (the native client just learned of its expiry): asked again
          // on a new session, which finds the node gone with the old one, or deletes it.
          if (attempt === 0 && this.session.endedBy(client, error)) continue;
          throw error;
        }
      }
    } catch (error) {
      if (zkErrorCode(error) === ZK_ERRORS.NO_NODE) return false;
      // Refused: the lock node's ACL no longer lets us delete; retrying later would be refused alike.
      const denied = this.permissionDenied(error, 'release');
      if (denied) throw denied;
      const parent = path.lastIndexOf('/');
      this.orphans.adopt(path.slice(0, parent), path.slice(parent + 1));
      throw error;
    } finally {
      // Off the line (or handed to the orphan sweeper): a writer waiting here behind it looks again.
      this.line.leave(path);
    }
  }
}
