import type { PooledLease } from './etcd-lease-pool';

/**
 * Keeps the lease of a waiting contender alive at a third of its TTL until the returned function is
 * called: its key must outlive the wait, which may be longer than the lease, as in etcd's own concurrency
 * session. `leaseOf` gives the contender's lease at each tick (undefined once it left). Each renewal that
 * etcd confirms moves the lease's `renewedAt` to when it was sent.
 */
export function keepAliveWhileWaiting(leaseOf: () => PooledLease | undefined, ttlMs: number): () => void {
  const everyMs = Math.max(100, Math.floor(ttlMs / 3));
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const tick = (): void => {
    const entry = leaseOf();
    if (stopped || !entry) return;
    const sentAt = Date.now();
    entry.lease.keepaliveOnce().then(
      (response) => {
        if (Number(response.TTL) > 0) entry.renewedAt = Math.max(entry.renewedAt, sentAt);
      },
      // A lease etcd no longer knows is reported by its 'lost' event; a failed round trip is retried.
      () => undefined,
    ).finally(() => {
      if (stopped) return;
      timer = setTimeout(tick, everyMs);
      timer.unref?.();
    });
  };
  timer = setTimeout(tick, everyMs);
  timer.unref?.();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
