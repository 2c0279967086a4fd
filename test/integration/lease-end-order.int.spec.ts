import { randomUUID } from 'node:crypto';
import type { LeaseGrant, LockStrategy, PermitGrant } from '@app/distributed-lock';
import { behindProxies, type LatencyProxy } from '../support/latency-proxy';
import { subjectNamed } from '../contract/subjects';

/**
 * The strategies that end a lease on the holder's own clock (the server keeps their lock for as long as the
 * holder's connection or session lives): pessimistic, advisory and ZooKeeper. What ends the lease there is the
 * holder's own rollback, unlock or delete, and that is also what lets the next contender in. Its lease-lost
 * listeners must hear of the end before that, or the next holder can be inside while the old one's signal
 * still says it holds (seen in the leader-election fault test: a new advisory leader 2 ms before the old one
 * was told). Deterministic here: the holder talks to its server through a proxy 40 ms each way, the waiter
 * directly, so an end sent before the telling lets the waiter in 40 ms before the holder is told.
 */
const SUBJECTS: ReadonlyArray<{ readonly subject: string; readonly variable: string }> = [
  { subject: 'pessimistic (MariaDB)', variable: 'LOCK_TEST_MYSQL_URL' },
  { subject: 'pessimistic (PostgreSQL)', variable: 'LOCK_TEST_POSTGRES_URL' },
  { subject: 'advisory (PostgreSQL)', variable: 'LOCK_TEST_POSTGRES_URL' },
  { subject: 'advisory GET_LOCK (MariaDB)', variable: 'LOCK_TEST_MYSQL_URL' },
  { subject: 'zookeeper (standalone)', variable: 'LOCK_TEST_ZOOKEEPER' },
];
const ONE_WAY_DELAY_MS = 40;
const TTL_MS = 600;

/** A strategy of `subject` whose connections to its server pass through latency proxies. */
async function behindDelay(subject: string, variable: string, proxies: LatencyProxy[]): Promise<LockStrategy> {
  const direct = process.env[variable];
  if (!direct) throw new Error(`${variable} is not set: run through npm test`);
  process.env[variable] = await behindProxies(direct, ONE_WAY_DELAY_MS, proxies);
  try {
    return await subjectNamed(subject).create();
  } finally {
    process.env[variable] = direct;
  }
}

/** Waits (bounded) for the holder to be told, then checks it was told before the next holder's grant. */
async function expectToldBefore(toldAt: () => number | undefined, grantedAt: number): Promise<void> {
  // Told at all (a late telling is the defect measured below, not a hang).
  for (const deadline = Date.now() + 5_000; toldAt() === undefined && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(toldAt(), 'the holder was never told its lease ended').toBeDefined();
  expect((toldAt() as number) - grantedAt, "ms from the next holder's grant to the old holder's telling").toBeLessThan(0);
}

describe.each(SUBJECTS)('a lease that ends on the holder\'s clock: $subject', ({ subject, variable }) => {
  it('tells the holder before its lock can go to the next contender', async () => {
    const proxies: LatencyProxy[] = [];
    const holder = await behindDelay(subject, variable, proxies);
    const waiter = await subjectNamed(subject).create();
    const key = `lease-end-order:${randomUUID()}`;
    const stop = new AbortController();
    try {
      const lease = await holder.tryAcquire({ key, owner: `holder-${randomUUID()}`, ttlMs: TTL_MS, mode: 'exclusive' });
      expect(lease).not.toBeNull();
      let toldAt: number | undefined;
      holder.onLeaseLost?.(lease as LeaseGrant, () => (toldAt ??= performance.now()));
      if (!waiter.acquire) throw new Error(`${subject} has no server-side wait`);
      const granted = await waiter.acquire({ key, owner: `waiter-${randomUUID()}`, ttlMs: 10_000, mode: 'exclusive' }, { signal: stop.signal, timeoutMs: 10_000 });
      const grantedAt = performance.now();
      expect(granted).not.toBeNull();
      await expectToldBefore(() => toldAt, grantedAt);
      await waiter.release(granted as LeaseGrant);
    } finally {
      stop.abort();
      await Promise.all([holder.close(), waiter.close()]);
      await Promise.all(proxies.map((proxy) => proxy.close()));
    }
  }, 30_000);
});

describe("a permit's lease that ends on the holder's clock: zookeeper (standalone)", () => {
  it('tells the holder before its place can go to the next waiter', async () => {
    const proxies: LatencyProxy[] = [];
    const holder = await behindDelay('zookeeper (standalone)', 'LOCK_TEST_ZOOKEEPER', proxies);
    const waiter = await subjectNamed('zookeeper (standalone)').create();
    const key = `lease-end-order-permit:${randomUUID()}`;
    const stop = new AbortController();
    try {
      const holderPermits = holder.semaphore;
      const waiterPermits = waiter.semaphore;
      if (!holderPermits || !waiterPermits?.acquire) throw new Error('zookeeper has semaphores with a server-side wait');
      const permit = await holderPermits.tryAcquire({ key, owner: `holder-${randomUUID()}`, ttlMs: TTL_MS, mode: 'exclusive', permits: 1, weight: 1 });
      expect(permit).not.toBeNull();
      let toldAt: number | undefined;
      holderPermits.onLeaseLost?.(permit as PermitGrant, () => (toldAt ??= performance.now()));
      const granted = await waiterPermits.acquire({ key, owner: `waiter-${randomUUID()}`, ttlMs: 10_000, mode: 'exclusive', permits: 1, weight: 1 }, { signal: stop.signal, timeoutMs: 10_000 });
      const grantedAt = performance.now();
      expect(granted).not.toBeNull();
      await expectToldBefore(() => toldAt, grantedAt);
      await waiterPermits.release(granted as PermitGrant);
    } finally {
      stop.abort();
      await Promise.all([holder.close(), waiter.close()]);
      await Promise.all(proxies.map((proxy) => proxy.close()));
    }
  }, 30_000);
});
