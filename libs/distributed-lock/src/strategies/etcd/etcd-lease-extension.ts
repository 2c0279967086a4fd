import { leaseExpiry } from '../../locking/lease-expiry';
import type { EtcdLockClient } from './etcd-client.type';
import type { EtcdLeasePool, PooledLease } from './etcd-lease-pool';
import { extensionOvertaken, isStillOursOnLease, moveKeyToLease, renewLease } from './etcd-lock.recipe';
import type { EtcdLeaseGrant } from './etcd-lock.strategy';
import type { EtcdStrayLeases } from './etcd-stray-leases';

/** What an extension needs of the strategy: its client, its leases and their pool, and a way to let a lock go. */
export interface EtcdHeldLeases {
  readonly client: EtcdLockClient;
  readonly pool: EtcdLeasePool;
  /** Leases that may carry a held key after a move to them whose answer was lost (see EtcdStrayLeases). */
  readonly strays: EtcdStrayLeases;
  /** The lease each holder (by owner id) has its key on. */
  readonly leases: Map<string, PooledLease>;
  /** Forgets a lock that is no longer ours; returns null, the extension's answer then. */
  forget(grant: EtcdLeaseGrant): null;
}

/**
 * Extends a held lock's lease: a keep-alive of its lease, or, for a longer TTL than the lease was granted
 * with, a move of its key to a fresh lease of that TTL (a put keeps the key's create revision, so its
 * fencing token stays the same). Null when the key is no longer ours. `overtaken`: a later extension of the
 * same lock started meanwhile (see OneAtATime).
 */
export async function extendEtcdLease(held: EtcdHeldLeases, grant: EtcdLeaseGrant, ttlMs: number, overtaken: () => boolean): Promise<EtcdLeaseGrant | null> {
  const entry = held.leases.get(grant.owner);
  if (!entry) return null;
  // A keep-alive renews a lease for the TTL it was granted with: a longer extension moves the key to a
  // lease of that TTL (a put keeps the key's create revision, so its fencing token stays the same).
  if (Math.ceil(ttlMs / 1000) > entry.ttlSeconds) return moveToLongerLease(held, grant, entry, ttlMs, overtaken);
  const sentAt = Date.now();
  if (!(await renewLease(entry.lease, grant.etcdKey, overtaken))) return held.forget(grant);
  entry.renewedAt = sentAt;
  // A keep-alive renews the lease for the TTL it was granted with; the key must still be ours, on it.
  if (!(await isStillOursOnLease(held.client, grant.etcdKey, grant.createRevision, entry.id, overtaken))) return held.forget(grant);
  if (overtaken()) throw extensionOvertaken(grant.etcdKey);
  held.strays.revokeStrays(grant.owner);
  // The lease was granted for at least ttlMs (whole seconds, rounded up): counting ttlMs is the safe side.
  // Not past a lease a move still on its way may yet put the key on.
  return { ...grant, expiresAt: Math.min(leaseExpiry(sentAt, ttlMs), held.strays.expiryCap(grant.owner)) };
}

/** Puts our key, if still ours, on a fresh lease of `ttlMs` (rounded up to whole seconds). */
async function moveToLongerLease(held: EtcdHeldLeases, grant: EtcdLeaseGrant, entry: PooledLease, ttlMs: number, overtaken: () => boolean): Promise<EtcdLeaseGrant | null> {
  const longer = await held.pool.take(Math.ceil(ttlMs / 1000), true);
  if (overtaken()) {
    held.pool.discard(longer); // nothing was put on it
    throw extensionOvertaken(grant.etcdKey);
  }
  const carrier = held.strays.moving(grant.owner, longer.lease, leaseExpiry(longer.renewedAt, ttlMs), ttlMs);
  let stillOurs: boolean;
  try {
    stillOurs = await moveKeyToLease(held.client, grant.etcdKey, grant.createRevision, grant.owner, longer.id, carrier.settleBy);
  } catch (error) {
    // The move's answer is lost, not necessarily the move: the longer lease may carry our key now. Unless
    // the key was let go meanwhile: then it goes with that lease too.
    if (held.leases.has(grant.owner)) held.strays.stray(carrier);
    else held.pool.discard(longer);
    throw error;
  }
  if (!stillOurs || !held.leases.has(grant.owner)) {
    held.pool.discard(longer);
    return held.forget(grant);
  }
  // A later extension ran while this move went unanswered, and may have moved the key on or put it back on
  // the lease this one would leave: the key is that one's to place, and the longer lease is a stray.
  if (overtaken() || held.leases.get(grant.owner) !== entry) {
    held.strays.stray(carrier);
    throw extensionOvertaken(grant.etcdKey);
  }
  held.strays.adopted(grant.owner, carrier);
  // The old lease no longer carries our key; its name (which has the old lease's id) stays with the key,
  // so the old lease must never make a key under this lock again: it is revoked, not pooled.
  longer.onLost = entry.onLost;
  longer.lastCreateRevision = entry.lastCreateRevision;
  entry.onLost = undefined;
  held.leases.set(grant.owner, longer);
  held.pool.discard(entry);
  held.strays.revokeStrays(grant.owner);
  const expiresAt = Math.min(leaseExpiry(longer.renewedAt, ttlMs), held.strays.expiryCap(grant.owner));
  const moved: EtcdLeaseGrant = { ...grant, leaseId: longer.id, expiresAt };
  return moved;
}
