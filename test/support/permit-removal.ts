import { randomUUID } from 'node:crypto';
import type { LockService, PermitHandle } from '@app/distributed-lock';
import type { SemaphoreStrategy } from '@app/distributed-lock/strategy-kit';
import { abortedWithin } from './aborted-within';

/** A semaphore's entries on its backend (nodes, keys), as an operator sees them. */
export interface PermitEntries {
  /** The entries of the semaphore with full key `key`, in queue order (the holder first). */
  list(key: string): Promise<string[]>;
  /** Deletes one entry behind its holder's back, as an operator or a bug would. */
  remove(entry: string): Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A permit (1 place, a lease of 60 s whose first extension comes long after the 5 s bound) whose entry is
 * deleted while its holder is in the section, with a waiter of another instance (`other`, its own client)
 * behind it: the holder's signal aborts with `removed` within 5 s, `withPermit` rejects with
 * `LockLostError`, and the waiter gets the place with a higher token. Only a backend that pushes the
 * deletion to the holder passes.
 */
export async function expectRemovedPermitReportedAtOnce(holder: LockService, other: LockService, key: string, entries: PermitEntries): Promise<void> {
  let waiter: Promise<PermitHandle> | undefined;
  let heldToken: number | undefined;
  // Read in the section, checked outside it: withPermit wraps whatever the section throws once the permit is lost.
  let told: unknown;
  let heldWhenTold: boolean | undefined;
  const section = holder.withPermit(
    key,
    async (permit) => {
      heldToken = permit.fencingToken;
      waiter = other.acquirePermit(key, { permits: 1, waitTimeout: 10_000 });
      for (let tries = 0; (await entries.list(key)).length < 2; tries += 1) {
        if (tries > 100) throw new Error(`the waiter never joined the queue of ${key}`);
        await sleep(20);
      }
      await sleep(100); // past the moment a backend arms its watch on the holder's entry
      await entries.remove((await entries.list(key))[0]);
      told = await abortedWithin(permit.signal, 5_000).catch((error: unknown) => error);
      heldWhenTold = permit.isHeld;
    },
    { permits: 1, ttl: 60_000 },
  );
  await expect(section).rejects.toMatchObject({ name: 'LockLostError', reason: 'removed' });
  expect(told).toMatchObject({ name: 'LockLostError', reason: 'removed' });
  expect(heldWhenTold).toBe(false);
  const next = await (waiter as Promise<PermitHandle>);
  expect(next.fencingToken).toBeGreaterThan(heldToken as number);
  expect(await next.release()).toBe(true);
}

/**
 * The strategy itself (the lock service stops listening at a release, so it would hide this): a permit
 * given back by its holder, once its watch is armed, tells none of its lost-lease listeners.
 */
export async function expectOwnReleaseNotReported(semaphore: SemaphoreStrategy, key: string): Promise<void> {
  const request = { key, owner: randomUUID(), ttlMs: 30_000, mode: 'exclusive', permits: 2, weight: 1 } as const;
  const grant = await semaphore.tryAcquire(request);
  if (!grant) throw new Error(`no permit of ${key}`);
  if (!semaphore.onLeaseLost) throw new Error('this semaphore has no lost-lease listeners to check');
  const told: string[] = [];
  semaphore.onLeaseLost(grant, (reason) => told.push(reason));
  await sleep(100); // its watch is armed
  expect(await semaphore.release(grant)).toBe(true);
  await sleep(500); // the deletion's event would have come in by now
  expect(told).toEqual([]);
}
