import { hostname } from 'node:os';
import { InvalidLockKeyError, InvalidLockOptionsError, type PermitHandle, type PermitsInfo } from '@app/distributed-lock';
import type { ContractSubject } from './contract-subject';
import { operatorSides } from './operator-sides';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `LockService.queryPermits` against the real server, for a subject with semaphores: what it says of a
 * semaphore agrees with the permits the instances hold, and with the order its queue then serves them. Every
 * instance is a strategy of its own; the one asking holds nothing. A subject whose semaphores do not answer
 * must refuse with a typed error, before touching its server.
 */
export function describePermitQueryContract(subject: ContractSubject): void {
  describe(`queryPermits: ${subject.name}`, () => {
    const sides = operatorSides(subject, 'permit-query');
    const { key, instance } = sides;

    if (!subject.answersPermitQuery) {
      it('refuses queryPermits() with InvalidLockOptionsError, and a bad key with InvalidLockKeyError', async () => {
        await expect(sides.observer.queryPermits(key())).rejects.toBeInstanceOf(InvalidLockOptionsError);
        await expect(sides.observer.queryPermits('')).rejects.toBeInstanceOf(InvalidLockKeyError);
      });
      return;
    }

    it('names each holder with its weight, token and lease, the size and the places in use; nobody once released', async () => {
      const k = key();
      const ttl = 10_000;
      const before = Date.now();
      const held = [await (await instance()).acquirePermit(k, { permits: 4, weight: 1, ttl }), await (await instance()).acquirePermit(k, { permits: 4, weight: 2, ttl })];
      const after = Date.now();
      const queriedAt = Date.now();
      const info = await sides.observer.queryPermits(k);
      const slack = (Date.now() - queriedAt) / 2 + 1;
      expect(info).toMatchObject({ key: k, permits: 4, inUse: 3 });
      const byOwner = new Map(info.held.map((holder) => [holder.owner.id, holder]));
      expect([...byOwner.keys()].sort()).toEqual(held.map((permit) => permit.owner).sort());
      for (const permit of held) {
        const holder = byOwner.get(permit.owner);
        expect(holder?.owner).toEqual({ id: permit.owner, host: hostname(), pid: process.pid, instance: null });
        expect(holder?.weight).toBe(permit.weight);
        expect(holder?.fencingToken).toBe(permit.fencingToken ?? null);
        if (subject.queryWithoutTimes) {
          expect([holder?.grantedAt, holder?.expiresAt]).toEqual([null, null]);
          continue;
        }
        expect(holder?.expiresAt).toBeGreaterThanOrEqual(before + ttl - slack);
        expect(holder?.expiresAt).toBeLessThanOrEqual(after + ttl + slack);
      }
      await Promise.all(held.map((permit) => permit.release()));
      expect(await sides.observer.queryPermits(k)).toEqual({ key: k, permits: null, inUse: 0, held: [], pending: subject.capabilities.semaphores?.fifo || subject.permitsQueued ? [] : null });
    });

    if (subject.capabilities.semaphores?.fifo) {
      it('lists the waiters of other instances in the order the semaphore serves them, with their weights', async () => {
        const k = key();
        const full = await (await instance()).acquirePermit(k, { permits: 2, weight: 2, ttl: 10_000 });
        const granted: PermitHandle[] = [];
        const [first, second] = [await instance(), await instance()];
        const firstWait = first.acquirePermit(k, { permits: 2, weight: 2, waitTimeout: 10_000 }).then((permit) => granted.push(permit));
        const queryUntil = async (done: (info: PermitsInfo) => boolean): Promise<PermitsInfo> => {
          for (const started = Date.now(); ; await sleep(20)) {
            const info = await sides.observer.queryPermits(k);
            if (done(info) || Date.now() - started > 5_000) return info;
          }
        };
        await queryUntil((info) => info.pending?.length === 1);
        const secondWait = second.acquirePermit(k, { permits: 2, weight: 1, waitTimeout: 10_000 }).then((permit) => granted.push(permit));
        const info = await queryUntil((state) => state.pending?.length === 2);
        expect(info.pending?.map((waiter) => [waiter.weight, waiter.owner.pid])).toEqual([
          [2, process.pid],
          [1, process.pid],
        ]);
        await full.release();
        await firstWait;
        expect(granted[0].owner).toBe(info.pending?.[0].owner.id);
        await granted[0].release();
        await secondWait;
        expect(granted[1].owner).toBe(info.pending?.[1].owner.id);
        await granted[1].release();
      });
    }
  });
}
