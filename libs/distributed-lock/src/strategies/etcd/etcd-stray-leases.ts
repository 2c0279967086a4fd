import type { EtcdLockClient } from './etcd-client.type';

type EtcdLease = ReturnType<EtcdLockClient['lease']>;

/** A lease that may carry a held key while its holder does not renew it. */
export interface KeyCarrier {
  readonly lease: EtcdLease;
  /** When the lease runs out at the latest (ms since epoch): the key goes with it if it is there. */
  readonly expiresAt: number;
  /**
   * The move must be answered by then (ms since epoch), a third of the lease before its end, so that the
   * holder knows where its key is while the lease can still carry it.
   */
  readonly settleBy: number;
  /** Its move is on its way: etcd may still put the key on it. */
  pending: boolean;
}

/**
 * Leases that may carry a held key while nobody renews them, by owner. A holder moves its key to a longer
 * lease to extend past its own. While that move is on its way, and after its answer is lost or comes too
 * late (overtaken by a later extension), the holder cannot tell whether the key moved. Revoking the new
 * lease then would delete the key if it had, so the lease is kept here (not renewed: it runs out by
 * itself), and the next extension puts the key back on the lease the holder renews. Meanwhile no extension
 * vouches for the key past the earliest end of these leases (`expiryCap`). A stray whose move is settled is
 * revoked once the key is known to be elsewhere; all are revoked when the holder lets the key go (release,
 * loss, close), so that the key never outlives its holder on them.
 */
export class EtcdStrayLeases {
  private readonly byOwner = new Map<string, KeyCarrier[]>();

  /** A move of the owner's key to `lease`, of `ttlMs`, is about to be sent. */
  moving(owner: string, lease: EtcdLease, expiresAt: number, ttlMs: number): KeyCarrier {
    const carrier: KeyCarrier = { lease, expiresAt, settleBy: expiresAt - ttlMs / 3, pending: true };
    this.byOwner.set(owner, [...(this.byOwner.get(owner) ?? []), carrier]);
    return carrier;
  }

  /** The move put the key on the carrier's lease, which its holder renews from now on. */
  adopted(owner: string, carrier: KeyCarrier): void {
    const left = (this.byOwner.get(owner) ?? []).filter((other) => other !== carrier);
    if (left.length > 0) this.byOwner.set(owner, left);
    else this.byOwner.delete(owner);
  }

  /** The move's outcome is unknown (its answer lost, or overtaken): the lease is a stray, no longer renewed. */
  stray(carrier: KeyCarrier): void {
    carrier.pending = false;
    carrier.lease.release();
  }

  /** The owner's key is on the lease it renews: its settled strays are revoked (in the background). */
  revokeStrays(owner: string): void {
    const carriers = this.byOwner.get(owner);
    if (!carriers) return;
    const pending = carriers.filter((carrier) => carrier.pending);
    for (const carrier of carriers) if (!carrier.pending) carrier.lease.revoke().catch(() => undefined);
    if (pending.length > 0) this.byOwner.set(owner, pending);
    else this.byOwner.delete(owner);
  }

  /** The owner lets its key go (release, loss): every lease that may carry it is revoked. */
  letGo(owner: string): void {
    const carriers = this.byOwner.get(owner);
    if (!carriers) return;
    this.byOwner.delete(owner);
    for (const carrier of carriers) carrier.lease.revoke().catch(() => undefined);
  }

  /** The earliest end of a lease that may carry the owner's key (Infinity when none may). */
  expiryCap(owner: string): number {
    return Math.min(Number.POSITIVE_INFINITY, ...(this.byOwner.get(owner) ?? []).map((carrier) => carrier.expiresAt));
  }

  async revokeAll(): Promise<void> {
    const carriers = [...this.byOwner.values()].flat();
    this.byOwner.clear();
    await Promise.all(carriers.map((carrier) => carrier.lease.revoke().catch(() => undefined)));
  }
}

/**
 * How long an extension waits for the one before it on the same lock: a third of the time left on the
 * lease, the watchdog's own retry cadence, so that a call that never returns costs a retry, not the lock.
 */
export function extensionTurnMs(expiresAt: number): number {
  return Math.max(10, (expiresAt - Date.now()) / 3);
}
