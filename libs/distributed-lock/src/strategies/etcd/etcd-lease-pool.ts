import type { WaitBudget } from '../../locking/lock-lease';
import type { EtcdLockClient } from './etcd-client.type';

type EtcdLease = ReturnType<EtcdLockClient['lease']>;

/** A granted etcd lease that holds at most one contender key at a time. */
export interface PooledLease {
  readonly lease: EtcdLease;
  readonly id: string;
  readonly ttlSeconds: number;
  /** When the grant or last keep-alive that set its current TTL was sent (ms). */
  renewedAt: number;
  /** Create revision of the last contender key made with this lease (0 before the first). */
  lastCreateRevision: bigint;
  /** Called once if etcd reports the lease gone while a lock uses it. */
  onLost?: () => void;
}

/** How many idle leases are kept per TTL; more are revoked. */
const IDLE_PER_TTL = 8;

/**
 * Leases of released locks, kept for the next lock with the same TTL. Granting a lease is a replicated
 * write and revoking one is slower still: taking a lease
 * whose key was just deleted makes an uncontended acquire + release two writes, as in the raw recipe.
 * A lease is only reused while at least two thirds of its TTL remain, so the holder's expiry stays
 * conservative; idle leases expire on their own if the process dies.
 */
export class EtcdLeasePool {
  private readonly idle = new Map<number, PooledLease[]>();
  private closed = false;

  constructor(private readonly client: EtcdLockClient) {}

  /**
   * An idle lease of that TTL with at least two thirds of it left, or a newly granted one (`fresh`: always).
   * A wait (`budget`) hears from etcd at the grant's answer: its first answer from the server.
   */
  async take(ttlSeconds: number, fresh = false, budget?: WaitBudget): Promise<PooledLease> {
    const idle = fresh ? [] : (this.idle.get(ttlSeconds) ?? []);
    for (let entry = idle.pop(); entry; entry = idle.pop()) {
      if (Date.now() - entry.renewedAt < (ttlSeconds * 1000) / 3 && !entry.lease.revoked()) return entry;
      this.discard(entry);
    }
    const entry = await this.grant(ttlSeconds);
    budget?.serverAnswered?.();
    return entry;
  }

  /** Puts back a lease whose key is deleted. */
  recycle(entry: PooledLease): void {
    entry.onLost = undefined;
    const idle = this.idle.get(entry.ttlSeconds) ?? [];
    if (this.closed || idle.length >= IDLE_PER_TTL || entry.lease.revoked()) return this.discard(entry);
    idle.push(entry);
    this.idle.set(entry.ttlSeconds, idle);
  }

  /** Revokes a lease in the background (its keys go with it); a failure only means it expires by itself. */
  discard(entry: PooledLease): void {
    entry.onLost = undefined;
    entry.lease.revoke().catch(() => undefined);
  }

  async close(): Promise<void> {
    this.closed = true;
    const idle = [...this.idle.values()].flat();
    this.idle.clear();
    await Promise.all(idle.map((entry) => entry.lease.revoke().catch(() => undefined)));
  }

  private async grant(ttlSeconds: number): Promise<PooledLease> {
    const sentAt = Date.now();
    const lease = this.client.lease(ttlSeconds, { autoKeepAlive: false });
    let entry: PooledLease | undefined;
    // etcd told the client the lease is gone (expired, revoked elsewhere): whoever uses it lost its lock.
    lease.on('lost', () => {
      if (!entry) return;
      const idle = this.idle.get(ttlSeconds);
      if (idle?.includes(entry)) idle.splice(idle.indexOf(entry), 1);
      const onLost = entry.onLost;
      entry.onLost = undefined;
      onLost?.();
    });
    try {
      entry = { lease, id: await lease.grant(), ttlSeconds, renewedAt: sentAt, lastCreateRevision: 0n };
      return entry;
    } catch (error) {
      lease.release();
      throw error;
    }
  }
}
