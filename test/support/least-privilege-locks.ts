import type { LockService } from '@app/distributed-lock';

/**
 * What the least-privilege tests ask of a lease-table strategy (RowLockStrategy) through its user: lock,
 * refuse a second holder, extend, release, and hand the key on with a higher fencing token.
 */
export async function expectLeaseLockThroughUser(service: LockService, contender: LockService, key: string): Promise<void> {
  const lock = await service.acquire(key, { ttl: 5_000 });
  expect(await contender.tryAcquire(key)).toBeNull();
  await lock.extend(5_000);
  expect(lock.fencingToken).toBeGreaterThan(0);
  expect(await lock.release()).toBe(true);
  const next = await contender.acquire(key, { waitTimeout: 2_000 });
  expect(next.fencingToken).toBeGreaterThan(lock.fencingToken ?? 0);
  await next.release();
}

/**
 * The same for a strategy whose waiter waits inside the server (FOR UPDATE, advisory locks): lock, refuse a
 * second holder, then a waiter gets the key on release, with a higher fencing token.
 */
export async function expectServerWaitThroughUser(service: LockService, contender: LockService, key: string): Promise<void> {
  const lock = await service.acquire(key);
  expect(await contender.tryAcquire(key)).toBeNull();
  const waiting = contender.acquire(key, { waitTimeout: 5_000 });
  expect(await lock.release()).toBe(true);
  const next = await waiting;
  expect(next.fencingToken).toBeGreaterThan(lock.fencingToken ?? 0);
  await next.release();
}

/**
 * The same for the lock table's semaphores (2 permits): two holders, a third refused, extend, release, and a
 * waiter gets the freed permit with a higher fencing token.
 */
export async function expectPermitsThroughUser(service: LockService, contender: LockService, key: string): Promise<void> {
  const first = await service.acquirePermit(key, { permits: 2, ttl: 5_000 });
  const second = await contender.acquirePermit(key, { permits: 2 });
  expect(await contender.tryAcquirePermit(key, { permits: 2 })).toBeNull();
  await first.extend(5_000);
  expect(await first.release()).toBe(true);
  const third = await contender.acquirePermit(key, { permits: 2, waitTimeout: 2_000 });
  expect(third.fencingToken).toBeGreaterThan(second.fencingToken ?? 0);
  expect(await second.release()).toBe(true);
  expect(await third.release()).toBe(true);
}
