import type { EtcdLockClient } from './etcd-client.type';

type EtcdLease = ReturnType<EtcdLockClient['lease']>;

/**
 * Leases that may carry a held key while nobody renews them. A holder moves its key to a longer lease to
 * extend past its own; when that move's answer is lost, it cannot tell whether the key moved. Revoking the
 * new lease then would delete the key if it had, so the lease is kept here instead (no longer renewed: it
 * runs out by itself), and the next extension puts the key back on the lease the holder renews. A stray
 * is revoked once the key is known to be elsewhere, and when its holder lets the key go (release, loss,
 * close), so that the key never outlives its holder on it.
 */
export class EtcdStrayLeases {
  private readonly byOwner = new Map<string, EtcdLease[]>();

  add(owner: string, lease: EtcdLease): void {
    lease.release();
    this.byOwner.set(owner, [...(this.byOwner.get(owner) ?? []), lease]);
  }

  /** The owner's key is on its own lease, or is let go: its strays are revoked (in the background). */
  revoke(owner: string): void {
    const strays = this.byOwner.get(owner);
    if (!strays) return;
    this.byOwner.delete(owner);
    for (const lease of strays) lease.revoke().catch(() => undefined);
  }

  async revokeAll(): Promise<void> {
    const strays = [...this.byOwner.values()].flat();
    this.byOwner.clear();
    await Promise.all(strays.map((lease) => lease.revoke().catch(() => undefined)));
  }
}

/**
 * How long an extension waits for the one before it on the same lock: a third of the time left on the
 * lease, the watchdog's own retry cadence, so that a call that never returns costs a retry, not the lock.
 */
export function extensionTurnMs(expiresAt: number): number {
  return Math.max(10, (expiresAt - Date.now()) / 3);
}
