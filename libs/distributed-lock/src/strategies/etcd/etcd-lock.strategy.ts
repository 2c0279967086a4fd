import type { IOptions } from 'etcd3';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { leaseEnd } from '../../locking/lease-end';
import type { LeaseGrant, LockRequest, WaitBudget } from '../../locking/lock-lease';
import { assertKnownKeys } from '../../locking/lock-options';
import { waitForWake } from '../../locking/wait-for-wake';
import type { LeaseLostListener, LockStrategy, LockStrategyCapabilities } from '../../locking/lock-strategy.interface';
import { loadPeerDependency } from '../load-peer-dependency';
import type { EtcdLockClient } from './etcd-client.type';
import { etcdContenderKey, etcdLockPrefix, isWriterKey } from './etcd-keys';
import { strategyName } from '../strategy-name';

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

interface Contender {
  readonly key: string;
  readonly createRevision: bigint;
}

const OPTION_KEYS = ['client', 'connection', 'name', 'namespace'];

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
 * minimum lease TTL.
 */
export class EtcdLockStrategy implements LockStrategy {
  readonly name: string;
  readonly capabilities: LockStrategyCapabilities = Object.freeze({ fencing: true, fifo: true, sharedLocks: true, crossProcess: true });
  private readonly client: EtcdLockClient;
  private readonly ownsClient: boolean;
  private readonly namespace: string;
  private readonly leases = new Map<string, ReturnType<EtcdLockClient['lease']>>();
  private readonly lostListeners = new Map<string, Set<LeaseLostListener>>();

  constructor(options: EtcdLockStrategyOptions) {
    const raw: unknown = options;
    assertKnownKeys(raw, OPTION_KEYS, 'EtcdLockStrategy options');
    this.name = strategyName(options.name, 'etcd');
    this.namespace = options.namespace ?? 'dlock/';
    if (typeof this.namespace !== 'string' || this.namespace.length === 0) throw new InvalidLockOptionsError('namespace', 'expected a non-empty string such as "dlock/".');
    if (options.client !== undefined && options.connection !== undefined) {
      throw new InvalidLockOptionsError('EtcdLockStrategy options', 'give either `client` (your Etcd3 instance) or `connection` (its options), not both.');
    }
    if (options.client) {
      this.client = options.client;
      this.ownsClient = false;
    } else {
      if (!options.connection || typeof options.connection !== 'object') {
        throw new InvalidLockOptionsError('EtcdLockStrategy options', 'give `client` (your Etcd3 instance) or `connection` (e.g. { hosts: "http://127.0.0.1:2379" }).');
      }
      const { Etcd3 } = loadPeerDependency<typeof import('etcd3')>('etcd3', this.name);
      this.client = new Etcd3(options.connection);
      this.ownsClient = true;
    }
  }

  async tryAcquire(request: LockRequest): Promise<LeaseGrant | null> {
    const attempt = await this.enter(request);
    if (attempt.first) return attempt.grant;
    const blocker = await this.blockerOf(attempt.prefix, attempt.own, request.mode);
    if (!blocker) return attempt.grant;
    await this.leave(attempt.grant);
    return null;
  }

  async acquire(request: LockRequest, budget: WaitBudget): Promise<LeaseGrant | null> {
    const deadline = Date.now() + budget.timeoutMs;
    const attempt = await this.enter(request);
    if (attempt.first) return attempt.grant;
    try {
      for (;;) {
        const blocker = await this.blockerOf(attempt.prefix, attempt.own, request.mode);
        if (!blocker) break;
        const deleted = await this.waitForDelete(blocker.key, blocker.seenAt, budget, deadline);
        if (!deleted) {
          await this.leave(attempt.grant);
          return null;
        }
      }
      // Our key may have gone while we waited (lease expired): only a key that still exists holds the lock.
      const own = await this.client.get(attempt.own.key).exec();
      if (own.kvs.length === 0 || BigInt(String(own.kvs[0].create_revision)) !== attempt.own.createRevision) {
        await this.leave(attempt.grant);
        return null;
      }
      return attempt.grant;
    } catch (error) {
      await this.leave(attempt.grant).catch(() => undefined);
      throw error;
    }
  }

  async extend(lease: LeaseGrant, ttlMs: number): Promise<LeaseGrant | null> {
    const grant = lease as EtcdLeaseGrant;
    const etcdLease = this.leases.get(grant.owner);
    if (!etcdLease) return null;
    const sentAt = Date.now();
    try {
      const response = await etcdLease.keepaliveOnce();
      if (Number(response.TTL) <= 0) return this.forget(grant.owner);
    } catch (error) {
      if ((error as { name?: string }).name === 'EtcdLeaseInvalidError') return this.forget(grant.owner);
      throw error;
    }
    // A keep-alive renews the lease for the TTL it was granted with; the key must still be ours.
    const own = await this.client.get(grant.etcdKey).exec();
    if (own.kvs.length === 0 || String(own.kvs[0].create_revision) !== grant.createRevision) return this.forget(grant.owner);
    // The lease was granted for at least ttlMs (whole seconds, rounded up): counting ttlMs is the safe side.
    return { ...grant, expiresAt: leaseEnd(sentAt, ttlMs) };
  }

  async release(lease: LeaseGrant): Promise<boolean> {
    const grant = lease as EtcdLeaseGrant;
    if (!this.leases.has(grant.owner)) return false;
    // Revoking the lease deletes our key (and only ours: the lease is this lock's alone).
    await this.leave(grant);
    return true;
  }

  onLeaseLost(lease: LeaseGrant, listener: LeaseLostListener): () => void {
    let listeners = this.lostListeners.get(lease.owner);
    if (!listeners) {
      listeners = new Set();
      this.lostListeners.set(lease.owner, listeners);
    }
    listeners.add(listener);
    return () => listeners.delete(listener);
  }

  async ping(): Promise<void> {
    await this.client.get(`${this.namespace}ping`).exec();
  }

  async close(): Promise<void> {
    await Promise.all([...this.leases.values()].map((lease) => lease.revoke().catch(() => undefined)));
    this.leases.clear();
    if (this.ownsClient) this.client.close();
  }

  /** Grants a lease and creates our contender key under the lock's prefix, if absent, in one transaction. */
  private async enter(request: LockRequest): Promise<{ prefix: string; own: Contender; grant: EtcdLeaseGrant; first: boolean }> {
    const prefix = etcdLockPrefix(this.namespace, request.key);
    const sentAt = Date.now();
    const lease = this.client.lease(Math.max(1, Math.ceil(request.ttlMs / 1000)), { autoKeepAlive: false });
    // etcd told the client the lease is gone (expired, revoked elsewhere): the lock went with it. Reported
    // at once to the holder, not only at the next watchdog extension.
    lease.on('lost', () => {
      const listeners = [...(this.lostListeners.get(request.owner) ?? [])];
      this.forget(request.owner);
      for (const listener of listeners) listener('session-ended');
    });
    let leaseId: string;
    try {
      leaseId = await lease.grant();
    } catch (error) {
      lease.release();
      throw error;
    }
    this.leases.set(request.owner, lease);
    try {
      const key = etcdContenderKey(prefix, request.mode, leaseId);
      // One round trip: create our key if absent, and read the oldest contender (are we first?).
      const txn = await this.client
        .if(key, 'Create', '==', 0)
        .then(this.client.put(key).value(request.owner).lease(leaseId), this.client.getAll().prefix(prefix).sort('Create', 'Ascend').limit(1))
        .commit();
      if (!txn.succeeded) throw new Error(`etcd key ${key} already exists`);
      const oldest = txn.responses[1]?.response_range?.kvs?.[0]?.key?.toString();
      const createRevision = BigInt(String(txn.header.revision));
      const grant: EtcdLeaseGrant = {
        key: request.key,
        owner: request.owner,
        mode: request.mode,
        fencingToken: Number(createRevision),
        expiresAt: leaseEnd(sentAt, request.ttlMs),
        etcdKey: key,
        createRevision: createRevision.toString(),
        leaseId,
      };
      // A reader is also free to go when the oldest contender is itself; otherwise the full check decides.
      return { prefix, own: { key, createRevision }, grant, first: oldest === key };
    } catch (error) {
      await lease.revoke().catch(() => undefined);
      this.leases.delete(request.owner);
      throw error;
    }
  }

  /**
   * The key we must wait for, or undefined when we hold the lock: for a writer, the key created just before
   * ours; for a reader, the last writer created before ours.
   */
  private async blockerOf(prefix: string, own: Contender, mode: LockRequest['mode']): Promise<{ key: string; seenAt: bigint } | undefined> {
    const range = this.client.getAll().prefix(prefix).sort('Create', 'Descend').maxCreateRevision(String(own.createRevision - 1n));
    const response = await (mode === 'exclusive' ? range.limit(1) : range).exec();
    const seenAt = BigInt(String(response.header.revision));
    const ahead = response.kvs.map((kv) => kv.key.toString());
    const blocker = mode === 'exclusive' ? ahead[0] : ahead.find(isWriterKey);
    return blocker === undefined ? undefined : { key: blocker, seenAt };
  }

  /** Watches one key for its deletion, from the revision we read it at. Resolves false when the budget ends. */
  private async waitForDelete(key: string, seenAt: bigint, budget: WaitBudget, deadline: number): Promise<boolean> {
    if (budget.signal.aborted || Date.now() >= deadline) return false;
    const watcher = await this.client.watch().key(key).startRevision(String(seenAt + 1n)).create();
    try {
      return await waitForWake(budget, deadline, (wake) => {
        watcher.on('delete', wake);
        // A broken watch is not a deletion, but a reason to look again (the caller re-reads who is ahead).
        watcher.on('error', wake);
      });
    } finally {
      await watcher.cancel().catch(() => undefined);
    }
  }

  /** Gives our place up: revoking the lease deletes the key, which wakes the contender behind us. */
  private async leave(grant: EtcdLeaseGrant): Promise<void> {
    const lease = this.leases.get(grant.owner);
    this.leases.delete(grant.owner);
    this.lostListeners.delete(grant.owner);
    if (lease) await lease.revoke();
  }

  private forget(owner: string): null {
    const lease = this.leases.get(owner);
    this.leases.delete(owner);
    this.lostListeners.delete(owner);
    lease?.release();
    return null;
  }
}
