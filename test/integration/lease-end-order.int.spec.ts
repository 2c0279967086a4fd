import { randomUUID } from 'node:crypto';
import type { LeaseGrant, LockStrategy, PermitGrant, WaitBudget } from '@app/distributed-lock/strategy-kit';
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

/** What the check does with a lock, or with a permit of the strategy's semaphore: the same steps for both. */
interface Grants {
  take(owner: string, ttlMs: number): Promise<LeaseGrant | null>;
  wait(owner: string, ttlMs: number, budget: WaitBudget): Promise<LeaseGrant | null>;
  onLost(grant: LeaseGrant, listener: () => void): void;
  release(grant: LeaseGrant): Promise<unknown>;
}

function locksOf(strategy: LockStrategy, key: string): Grants {
  const { acquire } = strategy;
  if (!acquire) throw new Error(`${strategy.name} has no server-side wait`);
  return {
    take: (owner, ttlMs) => strategy.tryAcquire({ key, owner, ttlMs, mode: 'exclusive' }),
    wait: (owner, ttlMs, budget) => acquire.call(strategy, { key, owner, ttlMs, mode: 'exclusive' }, budget),
    onLost: (grant, listener) => void strategy.onLeaseLost?.(grant, listener),
    release: (grant) => strategy.release(grant),
  };
}

function permitsOf(strategy: LockStrategy, key: string): Grants {
  const semaphore = strategy.semaphore;
  const acquire = semaphore?.acquire;
  if (!semaphore || !acquire) throw new Error(`${strategy.name} has no semaphore with a server-side wait`);
  const request = (owner: string, ttlMs: number) => ({ key, owner, ttlMs, mode: 'exclusive' as const, permits: 1, weight: 1 });
  return {
    take: (owner, ttlMs) => semaphore.tryAcquire(request(owner, ttlMs)),
    wait: (owner, ttlMs, budget) => acquire.call(semaphore, request(owner, ttlMs), budget),
    onLost: (grant, listener) => void semaphore.onLeaseLost?.(grant as PermitGrant, listener),
    release: (grant) => semaphore.release(grant as PermitGrant),
  };
}

/**
 * A holder 40 ms from its server lets its lease run out while a waiter next to the server waits: the holder's
 * lease-lost listeners must have been called before the waiter's grant comes back.
 */
async function expectHolderToldFirst(subject: string, variable: string, grantsOf: (strategy: LockStrategy, key: string) => Grants): Promise<void> {
  const proxies: LatencyProxy[] = [];
  const holderStrategy = await behindDelay(subject, variable, proxies);
  const waiterStrategy = await subjectNamed(subject).create();
  const key = `lease-end-order:${randomUUID()}`;
  const stop = new AbortController();
  try {
    const [holder, waiter] = [grantsOf(holderStrategy, key), grantsOf(waiterStrategy, key)];
    const lease = await holder.take(`holder-${randomUUID()}`, TTL_MS);
    expect(lease).not.toBeNull();
    let toldAt: number | undefined;
    holder.onLost(lease as LeaseGrant, () => (toldAt ??= performance.now()));
    const granted = await waiter.wait(`waiter-${randomUUID()}`, 10_000, { signal: stop.signal, timeoutMs: 10_000 });
    const grantedAt = performance.now();
    expect(granted).not.toBeNull();
    // Told at all (a late telling is the defect measured below, not a hang).
    for (const deadline = Date.now() + 5_000; toldAt === undefined && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(toldAt, 'the holder was never told its lease ended').toBeDefined();
    expect((toldAt as number) - grantedAt, "ms from the next holder's grant to the old holder's telling").toBeLessThan(0);
    await waiter.release(granted as LeaseGrant);
  } finally {
    stop.abort();
    await Promise.all([holderStrategy.close(), waiterStrategy.close()]);
    await Promise.all(proxies.map((proxy) => proxy.close()));
  }
}

describe.each(SUBJECTS)("a lease that ends on the holder's clock: $subject", ({ subject, variable }) => {
  it('tells the holder before its lock can go to the next contender', () => expectHolderToldFirst(subject, variable, locksOf), 30_000);
});

describe("a permit's lease that ends on the holder's clock: zookeeper (standalone)", () => {
  it('tells the holder before its place can go to the next waiter', () => expectHolderToldFirst('zookeeper (standalone)', 'LOCK_TEST_ZOOKEEPER', permitsOf), 30_000);
});
