import { randomUUID } from 'node:crypto';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import { leaseExpiry } from '../../locking/lease-expiry';
import type { LeaseGrant, LockRequest, WaitBudget } from '../../locking/lock-lease';
import type { KeyListing, LockInspection } from '../../locking/lock-query';
import type { HandOverLimits, LocalHandOverOption } from '../../locking/hand-over-limits';
import type { LeaseLostListener, LockStrategy, LockStrategyCapabilities, TransferOutcome } from '../../locking/lock-strategy.interface';
import { ZK_DELETED_EVENT, ZK_ERRORS, zkErrorCode, type ZooKeeperLockClient } from './zookeeper-client.type';
import { blockerAmong, blockerOf, createContender, listAroundCreate, tokenFromFirstLook, waitForDeletion } from './zookeeper-lock.recipe';
import { zkPermissionDenied } from './zookeeper-acl';
import { ZooKeeperLockOperator } from './zookeeper-lock-operator';
import { ZooKeeperHeldNodes } from './zookeeper-held-nodes';
import { deleteContenderNode } from './zookeeper-node-deletion';
import { zkFencingToken } from './zookeeper-hold-token';
import { passHold } from './zookeeper-local-pass';
import { ZooKeeperOrphans } from './zookeeper-orphans';
import { validZooKeeperOptions } from './zookeeper-options';
import { zkContenderPrefix, zkLockPath } from './zookeeper-paths';
import { ZooKeeperSemaphore } from './zookeeper-semaphore';
import { ZooKeeperSession, type ZooKeeperConnectionOptions } from './zookeeper-session';
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
  /**
   * Lock cohorting: a released lock is passed to the next request of this instance that waits for it,
   * with one write and nobody woken in another process, at most `passes` times in a row (up to 127) and
   * for at most `windowMs` after it came from the queue; then it goes back to the queue. Off by default
   * (`false`): every lock is served in arrival order across processes. `{}` takes 64 passes within 50 ms.
   */
  readonly localHandover?: LocalHandOverOption;
}

/** A ZooKeeper grant: our ephemeral sequential node (or, after a pass, the node of the hold it follows). */
export interface ZooKeeperLeaseGrant extends LeaseGrant {
  readonly znode: string;
}

/** How an attempt ended when the session it was made on ended under it: it is made again on a new one. */
const SESSION_ENDED = Symbol('session ended');

/**
 * How long a writer waits behind a writer of this process before it lists the children again: the bound
 * on noticing a node deleted behind both their backs that the one ahead did not report.
 */
const LOCAL_RECHECK_MS = 500;

/**
 * ZooKeeper's lock recipe, as Curator's InterProcessMutex implements it: each attempt creates an ephemeral
 * sequential node under the lock's node; the lowest holds; each waiter watches only its predecessor (no
 * herd effect, FIFO by construction; between two writers of this process the release tells the next one
 * directly, sparing it a children listing). Nodes are "protected" (found again after a lost create), lock nodes
 * are container nodes (removed by the server once empty), readers of a read-write lock wait only for
 * writers ahead of them. The fencing token comes from a zxid (see zkFencingToken): our node's creation
 * zxid, or when our first look shows our node alone and our create as the one change since the look before
 * it, the lock node's pzxid (which is then our czxid, see tokenFromFirstLook), plus the passes within this
 * process (`localHandover`, see passHold); strictly increasing from holder to holder, also when the lock
 * node is deleted and created again.
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
  readonly capabilities: LockStrategyCapabilities;
  /** With `localHandover`: the engine passes a released lock to the next contender of this instance (see passHold). */
  readonly transfer?: (lease: LeaseGrant, next: LockRequest) => Promise<TransferOutcome>;
  readonly handOverLimits?: HandOverLimits;
  readonly signalsServerAnswer = true;
  /** Counting semaphores (`LockService.acquirePermit`): Curator's SemaphoreV2 with ephemeral nodes, FIFO, fenced by czxid. */
  readonly semaphore: ZooKeeperSemaphore;
  private readonly session: ZooKeeperSession;
  private readonly basePath: string;
  /** The locks held, their leases, and how each one ends (see ZooKeeperHeldNodes). */
  private readonly held: ZooKeeperHeldNodes;
  /** Nodes we meant to delete, or may have created, when the connection was lost: deleted again later. */
  private readonly orphans: ZooKeeperOrphans;
  /**
   * Writers of this process in the lines of ZooKeeper, by node path. A release tells the writer right
   * behind with its delete (resolves true once the server applied it).
   */
  private readonly line = new SameProcessLine<Promise<boolean>>();
  /** Protection prefixes of our writers whose create is on its way (see `waitFor`). */
  private readonly writersCreating = new Set<string>();
  /** Deletes a contender node of ours (see deleteContenderNode). */
  private readonly deleteNode: (path: string) => Promise<boolean>;
  /** Acquisitions waiting in a line now: a session cut off meanwhile is given up for them too (they queue again). */
  private waiters = 0;
  /**
   * The digest user the session authenticates as (the part of `digestAuth` before ":"; never the
   * password), for messages. Defined exactly when the nodes we create get the creator-only ACL.
   */
  private readonly digestUser: string | undefined;
  /** The operator's calls (`query`, `queryPrefix`, `breakLock`): see ZooKeeperLockOperator. */
  readonly inspect: (key: string) => Promise<LockInspection>;
  readonly listKeys: (prefix: string, page: { readonly cursor?: string; readonly limit: number }) => Promise<KeyListing>;
  readonly breakLock: (key: string) => Promise<LockInspection['holders']>;

  constructor(options: ZooKeeperLockStrategyOptions) {
    const valid = validZooKeeperOptions(options);
    this.name = valid.name;
    this.basePath = valid.basePath;
    this.digestUser = valid.digestUser;
    // Passes overtake the queue's waiters of other processes, within the limits: arrival order no longer holds.
    this.capabilities = Object.freeze({ fencing: true, fifo: !valid.handOver, sharedLocks: true, crossProcess: true, semaphores: Object.freeze({ fifo: true, fencing: true }) });
    this.session = new ZooKeeperSession(options, this.name, valid.connectTimeout, {
      holdsLocks: () => this.held.size > 0 || this.waiters > 0 || this.semaphore.holdsPermits(),
    });
    this.orphans = new ZooKeeperOrphans(this.session);
    const deletion = { session: this.session, orphans: this.orphans, line: this.line, permissionDenied: (error: unknown) => this.permissionDenied(error, 'release') };
    this.deleteNode = (path) => deleteContenderNode(deletion, path);
    this.held = new ZooKeeperHeldNodes(this.session, this.line, this.deleteNode);
    this.semaphore = new ZooKeeperSemaphore({
      name: this.name,
      basePath: this.basePath,
      session: this.session,
      orphans: this.orphans,
      restrict: this.digestUser !== undefined,
      permissionDenied: (error, operation, key) => this.permissionDenied(error, operation, key),
    });
    const operator = new ZooKeeperLockOperator(this.session, this.basePath, (error, operation, key) => this.permissionDenied(error, operation, key));
    this.inspect = (key) => operator.inspect(key);
    this.listKeys = (prefix, page) => operator.listKeys(prefix, page);
    this.breakLock = (key) => operator.breakLock(key);
    if (valid.handOver) {
      this.handOverLimits = valid.handOver;
      const context = { held: this.held, session: this.session, deleteNode: this.deleteNode, release: (lease: LeaseGrant) => this.release(lease) };
      this.transfer = (lease, next) => passHold(context, lease, next);
    }
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
        this.held.forget(lease.owner);
        return null;
      }
      // The session ended under the call: the lock went with it (its holder is told as the session ends).
      if (this.session.endedBy(client, error) && this.held.get(lease.owner) !== node) return null;
      throw error;
    }
    // Passed on or released while the look was on its way: the node is no longer this hold's.
    if (this.held.get(lease.owner) !== node || node.passing) return null;
    const expiresAt = leaseExpiry(sentAt, ttlMs);
    this.held.armLease(lease.owner, node, expiresAt);
    return { ...lease, expiresAt };
  }

  async release(lease: LeaseGrant): Promise<boolean> {
    const node = this.held.get(lease.owner);
    // The lock's session is gone, and the lock with it: said now, rather than found out by a call to a
    // handle that is closing (its end deletes a node that a given-up session may still keep).
    if (!node || !this.session.isAlive(node.client)) return false;
    this.held.forget(lease.owner);
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
    await Promise.all(this.held.entries().map(async ([owner, node]) => {
      this.held.forget(owner);
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
        const client = await this.session.clientWithin(budget);
        // Given up while the session was being opened: no node to create, and none to clean up later.
        if (!client || (budget && budgetAborted(budget))) return null;
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
    // Looks sent right before and right behind the create, which createContender sends before its first
    // await: together they tell whether the lock node's pzxid is our create (see tokenFromFirstLook).
    const lookBefore = listAroundCreate(client, lockPath);
    const creating = createContender(client, { base: this.basePath, lockPath, prefix, restrict: this.digestUser !== undefined }, request.owner, this.orphans, this.name);
    const firstLook = listAroundCreate(client, lockPath);
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
      const token = look && firstBlocker === undefined ? tokenFromFirstLook(look, name, await lookBefore) : undefined;
      // Never granted on a session that ended meanwhile: the holder would not be told (it is not one yet).
      if (!this.session.isAlive(client)) return await this.sessionEnded(path);
      if (token !== undefined) {
        return this.grant(request, client, path, token, sentAt, true);
      }
      // Our node is watched: the watch tells the holder at once if an operator or a bug deletes its node,
      // instead of at the next extension. Its answer carries our czxid (the fencing token).
      let ownDeleted = false;
      const ownStat = client.w_exists(path, (type: number) => {
        if (type === ZK_DELETED_EVENT) ownDeleted = true;
        this.held.ownNodeEvent(request.owner, path, type);
      });
      ownStat.catch(() => undefined); // awaited below; a failure surfaces there
      // The session ending wakes the wait: no watch of ours fires then (the client drops them all).
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
      return this.grant(request, client, path, Number(stat.czxid), Date.now(), false);
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

  /**
   * Holds our node, granted by the zxid `zxid` (its create): the grant, its lease counted from `grantedAt`;
   * `watchLater` for a lock that was free.
   */
  private grant(request: LockRequest, client: ZooKeeperLockClient, path: string, zxid: number, grantedAt: number, watchLater: boolean): ZooKeeperLeaseGrant {
    const { expiresAt } = this.held.hold(request, client, path, { zxid, pass: 0, version: 0 }, grantedAt, watchLater);
    return { key: request.key, owner: request.owner, mode: request.mode, fencingToken: zkFencingToken(zxid, 0), expiresAt, znode: path };
  }
}

