import type { IOptions } from 'etcd3';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import { leaseExpiry } from '../../locking/lease-expiry';
import type { LeaseGrant, LockRequest, WaitBudget } from '../../locking/lock-lease';
import type { KeyListing, LockInspection } from '../../locking/lock-query';
import { assertKnownKeys } from '../../locking/lock-options';
import { OneAtATime } from '../../locking/one-at-a-time';
import { budgetAborted } from '../../locking/wait-for-wake';
import type { LeaseLostListener, LockStrategy, LockStrategyCapabilities } from '../../locking/lock-strategy.interface';
import { SameProcessLine } from '../same-process-line';
import { watchBlocker, type BlockerWaitOutcome } from './etcd-blocker-watch';
import type { EtcdLockClient } from './etcd-client.type';
import { resolveEtcdClient } from './etcd-connection';
import type { EtcdCallsInFlight } from './etcd-calls-in-flight';
import { etcdContenderKey, etcdLockPrefix, isLeaseGoneError } from './etcd-keys';
import { etcdPermissionDenied } from './etcd-refusal';
import { breakEtcdHolds } from './etcd-lock-break';
import { inspectEtcdLock } from './etcd-lock-inspection';
import { listEtcdLockKeys } from './etcd-key-listing';
import { keepAliveWhileWaiting } from './etcd-lease-keepalive';
import { extendEtcdLease, type EtcdHeldLeases } from './etcd-lease-extension';
import { EtcdLeasePool, type PooledLease } from './etcd-lease-pool';
import {
  blockerAfterPut,
  deleteIfStillOurs,
  keyAhead,
  keyAheadIfStillOurs,
  lineId,
  putContenderKey,
  type Blocker,
  type Contender,
  type EtcdTxnResult,
} from './etcd-lock.recipe';
import { EtcdOwnKeyWatches } from './etcd-own-key-watch';
import { EtcdSemaphore } from './etcd-semaphore';
import { EtcdStrayLeases, extensionTurnMs } from './etcd-stray-leases';
import { strategyName } from '../strategy-name';
import { untilGivenUp } from '../../locking/until-given-up';

/** Options of the etcd strategy. */
export interface EtcdLockStrategyOptions {
  /** Your `Etcd3` client. Never closed by the strategy. */
  readonly client?: EtcdLockClient;
  /** Or client options (hosts, TLS `credentials`, `auth`): the strategy creates the client and closes it. */
  readonly connection?: IOptions;
  /** Name in messages and events. Default "etcd". */
  readonly name?: string;
  /** Prefix of every etcd key. Default "dlock/". */
  readonly namespace?: string;
}

/** An etcd grant: the contender key, its create revision (the fencing token) and its lease. */
export interface EtcdLeaseGrant extends LeaseGrant {
  /** The contender key this holder created; `createRevision` compares against it in your transactions. */
  readonly etcdKey: string;
  readonly createRevision: string;
  readonly leaseId: string;
}

const OPTION_KEYS = ['client', 'connection', 'name', 'namespace'];

/**
 * How long a writer waits behind a writer of this process before it asks etcd again who is ahead: the
 * bound on noticing a key deleted behind both their backs (the holder itself notices at its next
 * extension, a third of its TTL in, and then tells its successor at once).
 */
const LOCAL_RECHECK_MS = 500;

/**
 * etcd's own lock recipe (client/v3/concurrency), built on the KV, lease and watch APIs: each attempt
 * creates a key under the lock's prefix, bound to a lease of the lock's TTL, in a transaction that only
 * creates it if absent. The holder is the key with the lowest create revision; every waiter watches only
 * the deletion of the key just before it (no herd, FIFO). After a wait, the own key is checked again
 * (Jepsen found etcd 3.4.3's recipe skipped that). The fencing token is the key's create revision:
 * global and monotonic. Readers of a read-write lock wait only for writers ahead of them.
 *
 * The lease is kept alive by the lock service's watchdog (one keep-alive per third of the TTL); a lease
 * that etcd reports gone aborts the lock's signal. etcd rounds TTLs up to whole seconds and to its
 * minimum lease TTL. A release deletes the key and keeps the lease for the next lock (see EtcdLeasePool):
 * an uncontended acquire + release is two writes, and a hand-over is one delete, one watch event and one
 * read. A writer right behind a writer of the same process waits for it here instead (see SameProcessLine):
 * no watch, and its release tells the next one directly: no watch event, no read (its own key, with a
 * higher create revision, gives it a higher fencing token as usual). A contended section between
 * writers of one process is then two writes, the put and the delete, as in the raw recipe.
 */
export class EtcdLockStrategy implements LockStrategy {
  readonly name: string;
  readonly capabilities: LockStrategyCapabilities = Object.freeze({
    fencing: true,
    fifo: true,
    sharedLocks: true,
    crossProcess: true,
    semaphores: Object.freeze({ fifo: true, fencing: true }),
  });
  readonly signalsServerAnswer = true;
  /** Counting semaphores (`LockService.acquirePermit`): a key per permit on a lease of its own, FIFO by create revision, fenced. */
  readonly semaphore: EtcdSemaphore;
  private readonly client: EtcdLockClient;
  private readonly ownsClient: boolean;
  /** The calls in flight of the client this strategy made, cancelled at its close. */
  private readonly ownCalls: EtcdCallsInFlight | undefined;
  private readonly namespace: string;
  private readonly pool: EtcdLeasePool;
  /** The lease each contender (by owner id) created its key with. */
  private readonly leases = new Map<string, PooledLease>();
  private readonly lostListeners = new Map<string, Set<LeaseLostListener>>();
  /** Watches on the keys of locks held a while (see EtcdOwnKeyWatches). */
  private readonly ownKeys: EtcdOwnKeyWatches;
  /** Writers of this process in the lines of etcd, by key and create revision (see `acquire`). */
  private readonly line = new SameProcessLine<'released'>();
  /**
   * Keys of our writers whose put-if-absent transaction is on its way (see `waitFor`), with the create
   * revision of the last key their lease had: the same name at that revision or before is an earlier
   * key of the same lease, already deleted.
   */
  private readonly writersEntering = new Map<string, bigint>();
  /** Leases that may carry a held key after a move to them whose answer was lost, by owner id. */
  private readonly strays = new EtcdStrayLeases();
  /** One extension at a time per lock: a key moving to a longer lease must not race another extension. */
  private readonly extensions = new OneAtATime();
  /** The etcd user of `connection.auth`, for messages (never its password). */
  private readonly user: string | undefined;
  /** What an extension works on (see extendEtcdLease). */
  private readonly held: EtcdHeldLeases;

  constructor(options: EtcdLockStrategyOptions) {
    const raw: unknown = options;
    assertKnownKeys(raw, OPTION_KEYS, 'EtcdLockStrategy options');
    this.name = strategyName(options.name, 'etcd');
    this.namespace = options.namespace ?? 'dlock/';
    if (typeof this.namespace !== 'string' || this.namespace.length === 0) throw new InvalidLockOptionsError('namespace', 'expected a non-empty string such as "dlock/".');
    const resolved = resolveEtcdClient(options.client, options.connection, this.name);
    this.client = resolved.client;
    this.ownsClient = resolved.owned;
    this.ownCalls = resolved.calls;
    this.user = options.connection?.auth?.username;
    this.pool = new EtcdLeasePool(this.client);
    this.ownKeys = new EtcdOwnKeyWatches(this.client, true);
    this.held = { client: this.client, pool: this.pool, strays: this.strays, leases: this.leases, forget: (grant) => this.forget(grant) };
    this.semaphore = new EtcdSemaphore(this.client, this.namespace, this.name, (operation, pending, key) => this.refusalsTyped(operation, pending, key));
  }

  tryAcquire(request: LockRequest): Promise<LeaseGrant | null> {
    return this.refusalsTyped('acquire', this.tryAcquireOnce(request), request.key);
  }

  acquire(request: LockRequest, budget: WaitBudget): Promise<LeaseGrant | null> {
    return this.refusalsTyped('acquire', this.acquireWaiting(request, budget), request.key);
  }

  extend(lease: LeaseGrant, ttlMs: number): Promise<LeaseGrant | null> {
    const extending = this.extensions.run(lease.owner, (overtaken) => extendEtcdLease(this.held, lease as EtcdLeaseGrant, ttlMs, overtaken), extensionTurnMs(lease.expiresAt));
    return this.refusalsTyped('extend', extending, lease.key);
  }

  release(lease: LeaseGrant): Promise<boolean> {
    return this.refusalsTyped('release', this.releaseLease(lease), lease.key);
  }

  /** The holders and waiters of `key`, from etcd's own state in one read (see inspectEtcdLock). */
  inspect(key: string): Promise<LockInspection> {
    const seeing = inspectEtcdLock(this.client, etcdLockPrefix(this.namespace, key));
    return this.refusalsTyped('query', seeing.then(({ holds, waiters }) => ({ holders: holds.map((hold) => hold.holder), waiters })), key);
  }

  /** The keys under `prefix` with contenders (held or waited for), a page at a time (see listEtcdLockKeys). */
  listKeys(prefix: string, page: { readonly cursor?: string; readonly limit: number }): Promise<KeyListing> {
    return this.refusalsTyped('queryPrefix', listEtcdLockKeys(this.client, this.namespace, prefix, page), prefix);
  }

  /** Ends every hold of `key` that a fresh inspection sees, each only while still the same (see breakEtcdHolds). */
  breakLock(key: string): Promise<LockInspection['holders']> {
    const breaking = inspectEtcdLock(this.client, etcdLockPrefix(this.namespace, key)).then(({ holds }) => breakEtcdHolds(this.client, holds));
    return this.refusalsTyped('breakLock', breaking, key);
  }

  ping(): Promise<void> {
    return this.refusalsTyped('ping', this.client.get(`${this.namespace}ping`).exec().then(() => undefined));
  }

  /** etcd's refusals (a role without the lock prefix, wrong credentials) as `LockPermissionDeniedError`. */
  private refusalsTyped<T>(operation: string, pending: Promise<T>, key?: string): Promise<T> {
    return pending.catch((error: unknown) => {
      throw etcdPermissionDenied(error, { strategy: this.name, operation, namespace: this.namespace, user: this.user, key }) ?? error;
    });
  }

  private async tryAcquireOnce(request: LockRequest): Promise<LeaseGrant | null> {
    const attempt = await this.enter(request);
    const blocker = attempt.blocker === 'unknown' ? await keyAhead(this.client, attempt.prefix, attempt.own, request.mode) : attempt.blocker;
    if (!blocker) return attempt.grant;
    await this.leave(attempt.grant);
    return null;
  }

  private async acquireWaiting(request: LockRequest, budget: WaitBudget): Promise<LeaseGrant | null> {
    const deadline = Date.now() + budget.timeoutMs;
    // Given up before it began (a wait shorter than a round trip): no key to create, and none to delete.
    if (budgetAborted(budget)) return null;
    // Heard from etcd at its first answer: the lease's grant (when the pool had none to give), or the put.
    const attempt = await this.enter(request, budget);
    budget.serverAnswered?.();
    let stopKeepingAlive: (() => void) | undefined;
    try {
      let blocker = attempt.blocker === 'unknown' ? await keyAhead(this.client, attempt.prefix, attempt.own, request.mode) : attempt.blocker;
      // Our key must outlive the wait, which may be longer than the lease: keep the lease alive meanwhile,
      // as etcd's own concurrency session does. The grant then counts its lease from the last renewal.
      if (blocker) stopKeepingAlive = keepAliveWhileWaiting(() => this.leases.get(request.owner), request.ttlMs);
      while (blocker) {
        const waited = await this.waitFor(blocker, request.mode, budget, deadline);
        if (waited === 'timeout') {
          await this.leave(attempt.grant);
          return null;
        }
        // The exclusive holder just ahead of us, in this process, released: nobody is ahead of us any
        // more (keys are never created ahead of an existing one), so we hold the lock as soon as its
        // delete lands, and nobody else can take it before: skip the watch event and the read. Only
        // while our own lease is known and well within its validity (our key then still exists, unless
        // someone deleted it behind our back: the first extension, a third of the TTL in, finds that).
        if (waited === 'told' && this.leases.has(request.owner)) {
          const renewed = this.renewedGrant(attempt.grant, request.ttlMs);
          if (renewed.expiresAt - Date.now() > request.ttlMs / 2) return renewed;
        }
        // Who is ahead now, and is our key still there? Only a key that still exists holds the lock
        // (Jepsen found etcd 3.4.3's recipe skipped that check): one read-only transaction for both.
        const next = await keyAheadIfStillOurs(this.client, attempt.prefix, attempt.own, request.mode);
        if (next === 'gone') {
          await this.leave(attempt.grant);
          return null;
        }
        blocker = next;
      }
      return this.renewedGrant(attempt.grant, request.ttlMs);
    } catch (error) {
      await this.leave(attempt.grant).catch(() => undefined);
      throw error;
    } finally {
      stopKeepingAlive?.();
    }
  }

  /** The grant with its lease counted from the last renewal of its etcd lease (it may have waited long). */
  private renewedGrant(grant: EtcdLeaseGrant, ttlMs: number): EtcdLeaseGrant {
    const entry = this.leases.get(grant.owner);
    return entry ? { ...grant, expiresAt: leaseExpiry(entry.renewedAt, ttlMs) } : grant;
  }

  private async releaseLease(lease: LeaseGrant): Promise<boolean> {
    const grant = lease as EtcdLeaseGrant;
    if (!this.leases.has(grant.owner)) return false;
    if (grant.mode === 'exclusive') this.line.release(lineId(grant.etcdKey, grant.createRevision), 'released');
    // False when our key was no longer there (deleted behind our back, or its lease expired unnoticed).
    return this.leave(grant);
  }

  onLeaseLost(lease: LeaseGrant, listener: LeaseLostListener): () => void {
    let listeners = this.lostListeners.get(lease.owner);
    if (!listeners) {
      listeners = new Set();
      this.lostListeners.set(lease.owner, listeners);
      const grant = lease as EtcdLeaseGrant;
      if (this.leases.has(grant.owner)) {
        this.ownKeys.watch(grant.owner, grant.etcdKey, grant.createRevision, (end) => {
          const told = [...(this.lostListeners.get(grant.owner) ?? [])];
          this.forget(grant);
          for (const heard of told) heard(end);
        });
      }
    }
    listeners.add(listener);
    return () => listeners.delete(listener);
  }

  async close(giveUp?: AbortSignal): Promise<void> {
    this.ownKeys.stopAll();
    const inUse = [...this.leases.values()];
    this.leases.clear();
    // Revoked now rather than left to expire, so that the keys are free at once; a server that does not
    // answer gets until `giveUp` (the leases then end on the server by their TTL).
    const revoked = Promise.all([...inUse.map((entry) => entry.lease.revoke().catch(() => undefined)), this.strays.revokeAll(), this.pool.close(), this.semaphore.close()]);
    await untilGivenUp(revoked, giveUp);
    if (!this.ownsClient) return;
    this.client.close();
    this.ownCalls?.cancelAll();
  }

  /**
   * Creates our contender key under the lock's prefix, if absent, bound to a lease, in one transaction
   * that also reads who is ahead: for a writer the newest key before ours (read before our put, in the
   * same transaction), for a reader only whether it is first (otherwise `keyAhead` decides).
   */
  private async enter(request: LockRequest, budget?: WaitBudget): Promise<{ prefix: string; own: Contender; grant: EtcdLeaseGrant; blocker: Blocker | undefined | 'unknown' }> {
    const prefix = etcdLockPrefix(this.namespace, request.key);
    const ttlSeconds = Math.max(1, Math.ceil(request.ttlMs / 1000));
    let entry = await this.pool.take(ttlSeconds, false, budget);
    let txn: CreatedKey;
    try {
      txn = await this.createKey(prefix, request, entry);
    } catch (error) {
      // A reused lease that etcd no longer knows (expired unnoticed): once more with a fresh one.
      this.pool.discard(entry);
      if (!isLeaseGoneError(error)) throw error;
      entry = await this.pool.take(ttlSeconds, true, budget);
      try {
        txn = await this.createKey(prefix, request, entry);
      } catch (retryError) {
        this.pool.discard(entry);
        throw retryError;
      }
    }
    this.leases.set(request.owner, entry);
    const createRevision = BigInt(String(txn.header.revision));
    entry.lastCreateRevision = createRevision;
    const grant: EtcdLeaseGrant = {
      key: request.key,
      owner: request.owner,
      mode: request.mode,
      fencingToken: Number(createRevision),
      expiresAt: leaseExpiry(entry.renewedAt, request.ttlMs),
      etcdKey: txn.key,
      createRevision: createRevision.toString(),
      leaseId: entry.id,
    };
    entry.onLost = () => {
      const listeners = [...(this.lostListeners.get(request.owner) ?? [])];
      this.forget(grant);
      for (const listener of listeners) listener('session-ended');
    };
    const own = { key: txn.key, createRevision };
    if (request.mode === 'exclusive') this.line.enter(lineId(txn.key, grant.createRevision));
    return { prefix, own, grant, blocker: blockerAfterPut(txn, txn.key, request.mode) };
  }

  /** Our contender key, created if absent on `entry`'s lease (see putContenderKey). */
  private async createKey(prefix: string, request: LockRequest, entry: PooledLease): Promise<CreatedKey> {
    const key = etcdContenderKey(prefix, request.mode, entry.id);
    const sentAt = Date.now();
    if (request.mode === 'exclusive') this.writersEntering.set(key, entry.lastCreateRevision);
    let txn: EtcdTxnResult;
    try {
      txn = await putContenderKey(this.client, prefix, key, request.owner, entry.id, request.mode);
    } finally {
      this.writersEntering.delete(key);
    }
    if (!txn.succeeded) throw new LockBackendUnavailableError(this.name, `acquire (its key ${key} already exists)`, Date.now() - sentAt, { key: request.key });
    return { key, header: txn.header, responses: txn.responses };
  }

  /**
   * Waits until the blocker is gone, or may be: behind a writer of this process, here (it tells us when
   * it releases or leaves); behind any other, with a watch on its key.
   */
  private waitFor(blocker: Blocker, mode: LockRequest['mode'], budget: WaitBudget, deadline: number): Promise<BlockerWaitOutcome> {
    const id = lineId(blocker.key, blocker.createRevision);
    // A writer of ours whose put landed before ours but whose answer is still on its way (answers can
    // overtake each other) is ours too: it joins the line under the same id once its answer is in.
    const entering = this.writersEntering.get(blocker.key);
    const ahead = this.line.has(id) || (entering !== undefined && BigInt(blocker.createRevision) > entering);
    if (mode === 'exclusive' && ahead) return this.line.waitBehind(id, budget, deadline, LOCAL_RECHECK_MS).then((waited) => waited.outcome);
    return watchBlocker(this.client, blocker, budget, deadline, mode === 'exclusive' ? (onNews) => this.line.listen(id, onNews) : undefined);
  }

  /**
   * Gives our place (or the lock) up: deletes our key, which wakes the contender behind us, and keeps
   * the lease for the next lock. If the delete fails, the lease is revoked (or expires) instead. Resolves
   * whether our key was still there: the delete is conditional on its create revision, in one round trip.
   */
  private async leave(grant: EtcdLeaseGrant): Promise<boolean> {
    const entry = this.leases.get(grant.owner);
    this.leases.delete(grant.owner);
    this.lostListeners.delete(grant.owner);
    this.ownKeys.stop(grant.owner);
    if (!entry) return false;
    entry.onLost = undefined;
    let wasOurs: boolean;
    try {
      wasOurs = await deleteIfStillOurs(this.client, grant.etcdKey, grant.createRevision);
    } catch (error) {
      this.pool.discard(entry);
      throw error;
    } finally {
      this.strays.letGo(grant.owner);
      // Once our key is gone (or its lease on the way out), a writer waiting here for us looks again.
      this.line.leave(lineId(grant.etcdKey, grant.createRevision));
    }
    this.pool.recycle(entry);
    return wasOurs;
  }

  /** Our lease or key is gone: nothing to delete; a writer waiting here behind us looks again. */
  private forget(grant: EtcdLeaseGrant): null {
    const entry = this.leases.get(grant.owner);
    this.leases.delete(grant.owner);
    this.lostListeners.delete(grant.owner);
    this.ownKeys.stop(grant.owner);
    if (entry) this.pool.discard(entry);
    this.strays.letGo(grant.owner);
    this.line.leave(lineId(grant.etcdKey, grant.createRevision));
    return null;
  }
}

/** Our contender key as its creating transaction answered: its name, the revision it was created at, what was read. */
type CreatedKey = Pick<EtcdTxnResult, 'header' | 'responses'> & { readonly key: string };
