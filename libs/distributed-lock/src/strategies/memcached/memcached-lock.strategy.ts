import type { MemcacheClient, MemcacheClientOptions } from 'memcache-client';
import type { LeaseGrant, LockRequest } from '../../locking/lock-lease';
import { assertKnownKeys } from '../../locking/lock-options';
import { handOverLimits, type HandOverLimits, type LocalHandOverOption } from '../../locking/hand-over-limits';
import type { LockStrategy, LockStrategyCapabilities } from '../../locking/lock-strategy.interface';
import { leaseExpiry } from '../../locking/lease-expiry';
import { strategyName } from '../strategy-name';
import type { MemcachedLockClient } from './memcached-client.type';
import { resolveMemcachedClient } from './memcached-connection';
import { memcachedExpiry } from './memcached-expiry';
import { assertMemcachedKeyFits, assertNamespace, memcachedLockKey } from './memcached-keys';
import { addOwner, deleteIfOwner, replaceIfOwner } from './memcached-lock.commands';

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
