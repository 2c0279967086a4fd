import type { MemcacheClient, MemcacheClientOptions } from 'memcache-client';
import type { LeaseGrant, LockRequest } from '../../locking/lock-lease';
import type { LockInspection } from '../../locking/lock-query';
import { assertKnownKeys } from '../../locking/lock-options';
import { handOverLimits, type HandOverLimits, type LocalHandOverOption } from '../../locking/hand-over-limits';
import type { LockStrategy, LockStrategyCapabilities } from '../../locking/lock-strategy.interface';
import { leaseExpiry } from '../../locking/lease-expiry';
import { strategyName } from '../strategy-name';
import type { MemcachedLockClient } from './memcached-client.type';
import { resolveMemcachedClient } from './memcached-connection';
import { memcachedExpiry } from './memcached-expiry';
import { assertMemcachedKeyFits, assertNamespace, memcachedLockKey } from './memcached-keys';
import { addOwner, deleteHolder, deleteIfOwner, ownerIdOf, readOwner, replaceIfOwner } from './memcached-lock.commands';

/** Options of the memcached strategy. */
export interface MemcachedLockStrategyOptions {
  /** Your `MemcacheClient` from memcache-client (one server). Never shut down by the strategy. */
  readonly client?: MemcacheClient;
  /**
   * Or "host:port" / memcache-client options: the strategy creates the client and shuts it down on close.
   * Unless set here, its `cmdTimeout` and `connectTimeout` are 5 000 ms and `noDelay` is true.
   */
  readonly connection?: string | MemcacheClientOptions;
  /** Name in messages and events. Default "memcached". */
  readonly name?: string;
  /**
   * Prefix of every memcached key the strategy writes: printable ASCII without spaces or "%", at most 100
   * bytes. It counts against memcached's 250-byte keys. Default "dlock:".
   */
  readonly namespace?: string;
  /**
   * Local hand-over: contenders of one process for a key wait in one line, only the first polls memcached,
   * and a release hands the lock straight to the next one (one compare-and-set) instead of freeing it for
   * the next poll; at most `passes` times in a row and within `windowMs` of taking it from memcached, so
   * other processes get their turn. `false` turns it off. Default `{ passes: 64, windowMs: 50 }`.
   */
  readonly localHandover?: LocalHandOverOption;
}

const OPTION_KEYS = ['client', 'connection', 'name', 'namespace', 'localHandover'];

/**
 * Locks in one memcached server (the `add` lock of the source articles, made safe): `add` takes a free
 * lock, storing the acquisition's owner id with the lease as the item's expiry; extend, release and
 * hand-over read the owner with its CAS value and change the item by a compare-and-set under that value
 * (a release stores it already expired), so nobody changes a lock that is not theirs. Expiries are whole
 * seconds: a lease is kept on the server at least as long as asked and at most one second and a fraction
 * longer (see `memcachedExpiry`). Waiting polls with backoff (memcached cannot notify), one poller per key
 * and process.
 *
 * No fencing tokens: memcached keeps nothing across a restart, may evict any item (a counter too), and
 * shows its clock only in whole seconds through `stats`, apart from any write, so no token could be proven
 * to grow across an eviction or a restart. memcached does not replicate, a restart frees every lock, and
 * eviction under memory pressure can drop a held lock: its holder learns at its next extension (the
 * watchdog's compare-and-set finds the item gone), so keep the lock's items in a server (or a slab) with
 * room to spare. Use the Redis, database, ZooKeeper or etcd strategy where correctness depends on the lock.
 *
 * `LockService.query` names the holder (owner id and mode only: no grant time, lease end or queue to read);
 * `breakLock` deletes its item under the CAS value read with it.
 */
export class MemcachedLockStrategy implements LockStrategy {
  readonly name: string;
  readonly capabilities: LockStrategyCapabilities = Object.freeze({ fencing: false, fifo: false, sharedLocks: false, crossProcess: true });
  readonly handOverLimits: HandOverLimits;
  private readonly client: MemcachedLockClient;
  private readonly ownsClient: boolean;
  private readonly namespace: string;

  constructor(options: MemcachedLockStrategyOptions) {
    const raw: unknown = options;
    assertKnownKeys(raw, OPTION_KEYS, 'MemcachedLockStrategy options');
    this.name = strategyName(options.name, 'memcached');
    this.namespace = assertNamespace(options.namespace ?? 'dlock:');
    this.handOverLimits = handOverLimits(options.localHandover);
    const resolved = resolveMemcachedClient(options.client, options.connection, this.name);
    this.client = resolved.client;
    this.ownsClient = resolved.owned;
  }

  validateKey(key: string): void {
    assertMemcachedKeyFits(this.namespace, key, this.name);
  }

  async tryAcquire(request: LockRequest): Promise<LeaseGrant | null> {
    const expiry = memcachedExpiry(request.ttlMs);
    const sentAt = Date.now();
    const stored = await addOwner(this.client, this.keyOf(request.key), request.owner, expiry);
    return stored ? this.grantOf(request, sentAt) : null;
  }

  async transfer(lease: LeaseGrant, next: LockRequest): Promise<LeaseGrant | null> {
    const expiry = memcachedExpiry(next.ttlMs);
    const sentAt = Date.now();
    const moved = await replaceIfOwner(this.client, this.keyOf(lease.key), lease.owner, next.owner, expiry);
    return moved ? this.grantOf(next, sentAt) : null;
  }

  async extend(lease: LeaseGrant, ttlMs: number): Promise<LeaseGrant | null> {
    const expiry = memcachedExpiry(ttlMs);
    const sentAt = Date.now();
    const extended = await replaceIfOwner(this.client, this.keyOf(lease.key), lease.owner, lease.owner, expiry);
    return extended ? { ...lease, expiresAt: leaseExpiry(sentAt, ttlMs) } : null;
  }

  release(lease: LeaseGrant): Promise<boolean> {
    return deleteIfOwner(this.client, this.keyOf(lease.key), lease.owner);
  }

  /**
   * The key's holder as its item names it (`LockService.query`): its owner id, nothing more. The item
   * stores no grant time, memcached shows no item's expiry to a read, and there are no fencing tokens.
   * `waiters` is undefined: memcached keeps no queue (contenders poll, each process's own line in that process).
   */
  async inspect(key: string): Promise<LockInspection> {
    const item = await readOwner(this.client, this.keyOf(key));
    return { holders: item ? [{ owner: ownerIdOf(item.owner), mode: 'exclusive' }] : [] };
  }

  /**
   * Deletes the holder's item by a compare-and-set under the CAS value read with it, so that a newer holder
   * is never broken (see `deleteHolder`). The holder learns at its next extension or release.
   */
  async breakLock(key: string): Promise<LockInspection['holders']> {
    const owner = await deleteHolder(this.client, this.keyOf(key));
    return owner === undefined ? [] : [{ owner, mode: 'exclusive' }];
  }

  async ping(): Promise<void> {
    await this.client.version();
  }

  async close(): Promise<void> {
    if (this.ownsClient) this.client.shutdown();
  }

  private keyOf(key: string): string {
    return memcachedLockKey(this.namespace, key);
  }

  private grantOf(request: LockRequest, sentAt: number): LeaseGrant {
    return { key: request.key, owner: request.owner, mode: request.mode, expiresAt: leaseExpiry(sentAt, request.ttlMs) };
  }
}
