import { PermitsMismatchError } from '../../errors/permits-mismatch.error';
import { leaseExpiry } from '../../locking/lease-expiry';
import type { PermitGrant, PermitRequest, WaitBudget } from '../../locking/lock-lease';
import type { LeaseLostListener, SemaphoreStrategy } from '../../locking/lock-strategy.interface';
import { permitGrantOf } from '../../locking/permit-grant';
import { budgetAborted, waitForWake } from '../../locking/wait-for-wake';
import type { EtcdLockClient } from './etcd-client.type';
import { etcdSemaphorePrefix } from './etcd-keys';
import { QUERY_CONTENDERS_LIMIT } from './etcd-lock-inspection';
import type { SemaphoreInspection } from '../../locking/lock-query';
import { permitLineInspection } from '../permit-line';
import { OneAtATime } from '../../locking/one-at-a-time';
import { extensionOvertaken, isStillOursOnLease, renewLease } from './etcd-lock.recipe';
import { EtcdOwnKeyWatches } from './etcd-own-key-watch';
import { EtcdStrayLeases, extensionTurnMs } from './etcd-stray-leases';

type EtcdLease = ReturnType<EtcdLockClient['lease']>;

/** A permit's key in etcd, its create revision (the place in the queue and the fencing token) and its lease. */
interface PermitKey {
  readonly prefix: string;
  readonly key: string;
  readonly createRevision: bigint;
  lease: EtcdLease;
  leaseId: string;
  ttlSeconds: number;
}

/** A contender key as read from etcd: its value is "<permits>/<weight>/<owner id>" ("<permits>/<weight>" from earlier versions). */
interface Contender {
  readonly key: Buffer;
  readonly value: Buffer;
  readonly create_revision: string | number;
}

/** Where a request stands in its semaphore's queue. */
type Standing = { readonly kind: 'holds' } | { readonly kind: 'waits' } | { readonly kind: 'mismatch'; readonly actual: number } | { readonly kind: 'gone' };

// The owner id comes last, for `queryPermits`: versions that read only the size and weight split off the
// first two fields and ignore it.
const valueOf = (request: PermitRequest): string => `${request.permits}/${request.weight}/${request.owner}`;

function parseValue(value: Buffer): { permits: number; weight: number; owner: string } {
  const [permits, weight, ...owner] = value.toString().split('/');
  return { permits: Number(permits), weight: Number(weight), owner: owner.join('/') };
}

/**
 * Whether the contender at `own` holds: the keys are the semaphore's queue in create-revision order, and
 * a key holds when the weights of the keys before it and its own fit in `permits` (so the holders are
 * always the head of the queue, and no waiter overtakes one ahead of it, however light). Another size
 * anywhere in the queue is a mismatch.
 */
function standingOf(request: PermitRequest, ownKey: string, contenders: readonly Contender[]): Standing {
  let used = 0;
  for (const contender of contenders) {
    if (contender.key.toString() === ownKey) continue;
    const other = parseValue(contender.value);
    if (other.permits !== request.permits) return { kind: 'mismatch', actual: other.permits };
    used += other.weight;
  }
  return used + request.weight <= request.permits ? { kind: 'holds' } : { kind: 'waits' };
}

/**
 * Counting semaphores in etcd, for `EtcdLockStrategy`: every acquisition puts a key under the semaphore's
 * prefix, bound to a lease of its own (the permit's lease: a crashed holder's key goes with it), in one
 * transaction that also reads the queue. Keys are ordered by create revision; the head of the queue whose
 * weights fit in `permits` holds, so waiting is FIFO. A waiter watches the prefix for deletions (any
 * key ahead leaving may let it in: with N places, the key N ahead of it is not the only one that can free
 * one) and reads the keys ahead again, checking that its own is still there. The fencing token is the
 * key's create revision: global, strictly increasing in the order of the grants.
 */
export class EtcdSemaphore implements SemaphoreStrategy {
  readonly signalsServerAnswer = true;
  /** The keys of the permits this strategy holds or waits for, by owner id. */
  private readonly keys = new Map<string, PermitKey>();
  /** Watches on the keys of held permits: a key deleted behind its holder is reported at once. */
  private readonly ownKeys: EtcdOwnKeyWatches;
  /** Told when a held permit's key is deleted behind its holder, by owner id. */
  private readonly lostListeners = new Map<string, Set<LeaseLostListener>>();
  /** Leases that may carry a held permit's key after a move to them whose answer was lost, by owner id. */
  private readonly strays = new EtcdStrayLeases();
  /** One extension at a time per permit: a key moving to a longer lease must not race another extension. */
  private readonly extensions = new OneAtATime();

  constructor(
    private readonly client: EtcdLockClient,
    private readonly namespace: string,
    private readonly name: string,
    /** The strategy's typing of refusals: an RBAC "permission denied" becomes `LockPermissionDeniedError`. */
    private readonly refusalsTyped: <T>(operation: string, pending: Promise<T>, key?: string) => Promise<T>,
  ) {
    this.ownKeys = new EtcdOwnKeyWatches(client);
  }

  tryAcquire(request: PermitRequest): Promise<PermitGrant | null> {
    return this.refusalsTyped('acquire', this.tryAcquireOnce(request), request.key);
  }

  acquire(request: PermitRequest, budget: WaitBudget): Promise<PermitGrant | null> {
    return this.refusalsTyped('acquire', this.acquireWaiting(request, budget), request.key);
  }

  extend(lease: PermitGrant, ttlMs: number): Promise<PermitGrant | null> {
    const extending = this.extensions.run(lease.owner, (overtaken) => this.extendLease(lease, ttlMs, overtaken), extensionTurnMs(lease.expiresAt));
    return this.refusalsTyped('extend', extending, lease.key);
  }

  release(lease: PermitGrant): Promise<boolean> {
    return this.refusalsTyped('release', this.releaseLease(lease), lease.key);
  }

  /**
   * The semaphore's size, holders and waiters, from etcd's own state in one read: its keys in create-revision
   * order (at most QUERY_CONTENDERS_LIMIT), the holders the head whose weights fit. The owner is in the key's
   * value, the fencing token is its create revision. No times, as for the lock (see inspectEtcdLock).
   */
  inspect(key: string): Promise<SemaphoreInspection> {
    const reading = this.client
      .getAll()
      .prefix(etcdSemaphorePrefix(this.namespace, key))
      .sort('Create', 'Ascend')
      .limit(QUERY_CONTENDERS_LIMIT)
      .exec()
      .then((range) => {
        const line = range.kvs.map((kv) => ({ ...parseValue(kv.value), fencingToken: Number(kv.create_revision) }));
        // A key of another size is a caller being refused, on its way out: the size is the head's.
        const permits = line[0]?.permits;
        return permitLineInspection(permits, line.filter((contender) => contender.permits === permits));
      });
    return this.refusalsTyped('queryPermits', reading, key);
  }

  /** Told when the permit's key is deleted (or replaced) behind its holder, while it holds it. */
  onLeaseLost(lease: PermitGrant, listener: LeaseLostListener): () => void {
    if (!this.keys.has(lease.owner)) return () => undefined;
    let listeners = this.lostListeners.get(lease.owner);
    if (!listeners) {
      listeners = new Set();
      this.lostListeners.set(lease.owner, listeners);
    }
    listeners.add(listener);
    return () => listeners.delete(listener);
  }

  private async tryAcquireOnce(request: PermitRequest): Promise<PermitGrant | null> {
    const { entry, standing, sentAt } = await this.enter(request);
    if (standing.kind === 'holds') return this.grantOf(request, entry, sentAt);
    await this.leave(request.owner);
    if (standing.kind === 'mismatch') throw new PermitsMismatchError(request.key, this.name, request.permits, standing.actual);
    return null;
  }

  private async acquireWaiting(request: PermitRequest, budget: WaitBudget): Promise<PermitGrant | null> {
    const deadline = Date.now() + budget.timeoutMs;
    if (budgetAborted(budget)) return null;
    // Heard from etcd at its first answer: the grant of the key's lease.
    const { entry, standing, sentAt } = await this.enter(request, budget);
    if (standing.kind === 'holds') return this.grantOf(request, entry, sentAt);
    if (standing.kind === 'mismatch') {
      await this.leave(request.owner);
      throw new PermitsMismatchError(request.key, this.name, request.permits, standing.actual);
    }
    let renewedAt = sentAt;
    // Our key must outlive the wait, which may be longer than its lease: keep the lease alive meanwhile.
    const keepAlive = setInterval(() => {
      const at = Date.now();
      entry.lease.keepaliveOnce().then(
        (response) => {
          if (Number(response.TTL) > 0) renewedAt = Math.max(renewedAt, at);
        },
        // A lease etcd no longer knows took our key with it: the next read finds the key gone.
        () => undefined,
      );
    }, Math.max(100, Math.floor((entry.ttlSeconds * 1000) / 3)));
    keepAlive.unref?.();
    let watcher: Awaited<ReturnType<ReturnType<EtcdLockClient['watch']>['create']>> | undefined;
    try {
      let deleted = false;
      let wakeNow: (() => void) | undefined;
      watcher = await this.client.watch().prefix(entry.prefix).create();
      watcher.on('delete', () => {
        deleted = true;
        wakeNow?.();
      });
      // A broken watch is no deletion, but a reason to look again.
      watcher.on('error', () => wakeNow?.());
      for (;;) {
        // Read once the watch is in place: a deletion between our first read and the watch is seen here.
        const now = await this.standingNow(request, entry);
        if (now.kind === 'holds') return this.grantOf(request, entry, renewedAt);
        if (now.kind === 'gone') {
          await this.leave(request.owner);
          return null;
        }
        const woken = deleted || (await waitForWake(budget, deadline, (wake) => {
          wakeNow = wake;
          return () => (wakeNow = undefined);
        }));
        deleted = false;
        if (!woken) {
          await this.leave(request.owner);
          return null;
        }
      }
    } catch (error) {
      await this.leave(request.owner).catch(() => undefined);
      throw error;
    } finally {
      clearInterval(keepAlive);
      // Not awaited: the cancel round trip is not on the grant's path.
      watcher?.cancel().catch(() => undefined);
    }
  }

  private async extendLease(lease: PermitGrant, ttlMs: number, overtaken: () => boolean): Promise<PermitGrant | null> {
    const entry = this.keys.get(lease.owner);
    if (!entry) return null;
    const sentAt = Date.now();
    const ttlSeconds = Math.max(1, Math.ceil(ttlMs / 1000));
    // A keep-alive renews a lease for the TTL it was granted with: a longer one moves the key to a new
    // lease (a put keeps the key's create revision, so its place and its token stay the same).
    if (ttlSeconds > entry.ttlSeconds) {
      if (!(await this.moveToLease(lease.owner, entry, ttlSeconds, overtaken))) return this.forget(lease.owner);
    } else if (!(await renewLease(entry.lease, entry.key, overtaken))) {
      return this.forget(lease.owner);
    }
    if (!(await isStillOursOnLease(this.client, entry.key, String(entry.createRevision), entry.leaseId, overtaken))) return this.forget(lease.owner);
    if (overtaken()) throw extensionOvertaken(entry.key);
    this.strays.revokeStrays(lease.owner);
    // Not past a lease a move still on its way may yet put the key on.
    return { ...lease, expiresAt: Math.min(leaseExpiry(sentAt, ttlMs), this.strays.expiryCap(lease.owner)) };
  }

  private async releaseLease(lease: PermitGrant): Promise<boolean> {
    if (!this.keys.has(lease.owner)) return false;
    return this.leave(lease.owner);
  }

  /** Gives back every permit of this strategy (its close). */
  async close(): Promise<void> {
    const entries = [...this.keys.values()];
    this.keys.clear();
    this.ownKeys.stopAll();
    this.lostListeners.clear();
    await Promise.all([...entries.map((entry) => entry.lease.revoke().catch(() => undefined)), this.strays.revokeAll()]);
  }

  /** Puts our key on a lease of its own, in one transaction that also reads the semaphore's queue. */
  private async enter(request: PermitRequest, budget?: WaitBudget): Promise<{ entry: PermitKey; standing: Standing; sentAt: number }> {
    const prefix = etcdSemaphorePrefix(this.namespace, request.key);
    const ttlSeconds = Math.max(1, Math.ceil(request.ttlMs / 1000));
    const sentAt = Date.now();
    const lease = this.client.lease(ttlSeconds, { autoKeepAlive: false });
    let txn: Awaited<ReturnType<ReturnType<EtcdLockClient['if']>['commit']>>;
    let key: string;
    let leaseId: string;
    try {
      const id = await lease.grant();
      budget?.serverAnswered?.();
      leaseId = id;
      key = `${prefix}${id}`;
      txn = await this.client
        .if(key, 'Create', '==', 0)
        .then(this.client.put(key).value(valueOf(request)).lease(id), this.client.getAll().prefix(prefix).sort('Create', 'Ascend'))
        .commit();
      if (!txn.succeeded) throw new Error(`etcd key ${key} already exists`);
    } catch (error) {
      lease.revoke().catch(() => undefined);
      throw error;
    }
    const entry: PermitKey = { prefix, key, createRevision: BigInt(String(txn.header.revision)), lease, leaseId, ttlSeconds };
    this.keys.set(request.owner, entry);
    const contenders = (txn.responses[1]?.response_range?.kvs ?? []) as Contender[];
    return { entry, standing: standingOf(request, key, contenders), sentAt };
  }

  /** Where our key stands now: the keys created before it, read in one transaction that checks it still exists. */
  private async standingNow(request: PermitRequest, entry: PermitKey): Promise<Standing> {
    const ahead = this.client.getAll().prefix(entry.prefix).sort('Create', 'Ascend').maxCreateRevision(String(entry.createRevision - 1n));
    const txn = await this.client.if(entry.key, 'Create', '==', String(entry.createRevision)).then(ahead).commit();
    if (!txn.succeeded) return { kind: 'gone' };
    return standingOf(request, entry.key, (txn.responses[0]?.response_range?.kvs ?? []) as Contender[]);
  }

  /** Moves our key, if still ours, to a fresh lease of `ttlSeconds`; the old lease is revoked. */
  private async moveToLease(owner: string, entry: PermitKey, ttlSeconds: number, overtaken: () => boolean): Promise<boolean> {
    const longer = this.client.lease(ttlSeconds, { autoKeepAlive: false });
    let id: string;
    let value: string | undefined;
    const grantedAt = Date.now();
    try {
      id = await longer.grant();
      value = (await this.client.get(entry.key).exec()).kvs[0]?.value?.toString();
    } catch (error) {
      longer.revoke().catch(() => undefined); // nothing was put on it
      throw error;
    }
    if (overtaken()) {
      longer.revoke().catch(() => undefined);
      throw extensionOvertaken(entry.key);
    }
    // Our key gone, or replaced by another with the same name: the permit is not ours any more.
    if (value === undefined) {
      longer.revoke().catch(() => undefined);
      return false;
    }
    const carrier = this.strays.moving(owner, longer, leaseExpiry(grantedAt, ttlSeconds * 1000), ttlSeconds * 1000);
    const move = this.client.if(entry.key, 'Create', '==', String(entry.createRevision)).then(this.client.put(entry.key).value(value).lease(id));
    let moved: boolean;
    try {
      moved = (await move.options({ deadline: carrier.settleBy }).commit()).succeeded;
    } catch (error) {
      // The move's answer is lost, not necessarily the move: the longer lease may carry our key now. Unless
      // the key was let go meanwhile: then it goes with that lease too.
      if (this.keys.get(owner) === entry) this.strays.stray(carrier);
      else longer.revoke().catch(() => undefined);
      throw error;
    }
    if (!moved || this.keys.get(owner) !== entry) {
      longer.revoke().catch(() => undefined);
      return false;
    }
    // A later extension ran while this move went unanswered, and may have moved the key on or put it back on
    // the lease this one would leave: the key is that one's to place, and the longer lease is a stray.
    if (overtaken()) {
      this.strays.stray(carrier);
      throw extensionOvertaken(entry.key);
    }
    this.strays.adopted(owner, carrier);
    const old = entry.lease;
    entry.lease = longer;
    entry.leaseId = id;
    entry.ttlSeconds = ttlSeconds;
    old.revoke().catch(() => undefined);
    this.strays.revokeStrays(owner);
    return true;
  }


  /**
   * Gives our place (or permit) up: deletes our key if it is still ours, which wakes the waiters behind it,
   * and revokes its lease. Resolves whether the key was still there.
   */
  private async leave(owner: string): Promise<boolean> {
    const entry = this.keys.get(owner);
    this.untrack(owner);
    if (!entry) return false;
    try {
      const txn = await this.client.if(entry.key, 'Create', '==', String(entry.createRevision)).then(this.client.delete().key(entry.key)).commit();
      return txn.succeeded;
    } finally {
      // In the background: the key is gone already, or goes with its lease.
      entry.lease.revoke().catch(() => undefined);
      this.strays.letGo(owner);
    }
  }

  /** Our key or its lease is gone: nothing to delete. */
  private forget(owner: string): null {
    const entry = this.keys.get(owner);
    this.untrack(owner);
    entry?.lease.revoke().catch(() => undefined);
    this.strays.letGo(owner);
    return null;
  }

  /** Stops following a permit of ours: its key, its watch, its listeners. */
  private untrack(owner: string): void {
    this.keys.delete(owner);
    this.ownKeys.stop(owner);
    this.lostListeners.delete(owner);
  }

  /** The key of a held permit was deleted behind its holder: the holder is told, the place is someone else's. */
  private keyDeleted(owner: string, entry: PermitKey): void {
    if (this.keys.get(owner) !== entry) return;
    const listeners = [...(this.lostListeners.get(owner) ?? [])];
    this.forget(owner);
    for (const listener of listeners) listener('removed');
  }

  /** A grant: from here on its key is watched (see EtcdOwnKeyWatches). */
  private grantOf(request: PermitRequest, entry: PermitKey, renewedAt: number): PermitGrant {
    // Not after close(), which stopped every watch: a watch set then would outlive the strategy.
    if (this.keys.get(request.owner) === entry) this.ownKeys.watch(request.owner, entry.key, String(entry.createRevision), () => this.keyDeleted(request.owner, entry));
    return permitGrantOf(request, Number(entry.createRevision), leaseExpiry(renewedAt, request.ttlMs));
  }
}
