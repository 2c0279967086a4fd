import { LockAcquireAbortedError, type LockManager, type LockService } from '@app/distributed-lock';

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

/**
 * What ending a wait and closing a strategy ask of the user (issue 41), for a strategy whose waiter waits
 * inside the server: an aborted wait's session, and the session of a lock held when its instance closes, are
 * ended from another connection of the same user (`KILL CONNECTION`, `pg_terminate_backend`) and watched
 * until the server no longer lists them (the process list, `pg_stat_activity`). The key is then free at
 * once for a third instance. Were the kill refused (a user without the right), the aborted wait would go on
 * and take the key when the holder closes.
 */
export async function expectEndsThroughUser(make: () => { manager: LockManager; locks: LockService }, key: string): Promise<void> {
  const [holder, waiter, third] = [make(), make(), make()];
  await holder.locks.acquire(key, { ttl: 30_000 });
  const controller = new AbortController();
  const waiting = waiter.locks.acquire(key, { ttl: 30_000, waitTimeout: 20_000, signal: controller.signal }).catch((error: unknown) => error);
  // Time for the wait to reach the server.
  await new Promise((resolve) => setTimeout(resolve, 300));
  controller.abort(new Error('cancelled by the caller'));
  expect(await waiting).toBeInstanceOf(LockAcquireAbortedError);
  await holder.manager.close();
  const next = await third.locks.tryAcquire(key, { ttl: 30_000 });
  expect(next).not.toBeNull();
  await next?.release();
}
