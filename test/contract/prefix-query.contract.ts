import { InvalidLockKeyError, InvalidLockOptionsError, type LockHandle, type LockInfo, type LockService } from '@app/distributed-lock';
import type { ContractSubject } from './contract-subject';
import { operatorSides } from './operator-sides';

/** Every page of `queryPrefix(prefix)`, `limit` keys at a time, in order, and how many pages it took. */
async function allPages(observer: LockService, prefix: string, limit: number): Promise<{ locks: LockInfo[]; pages: number }> {
  const locks: LockInfo[] = [];
  let cursor: string | null = null;
  for (let pages = 1; ; pages += 1) {
    const page = await observer.queryPrefix(prefix, { limit, cursor });
    locks.push(...page.locks);
    if (page.next === null) return { locks, pages };
    if (pages > 1_000) throw new Error('queryPrefix never reached its last page');
    cursor = page.next;
  }
}

/**
 * `LockService.queryPrefix` against the real server: the keys under a prefix that instances hold, each with
 * its holder as `query` names it, over pages that together list each exactly once, and none outside the
 * prefix, however the prefix's characters mean something to the backend (LIKE's `%` and `_`, a SCAN
 * pattern's `*` and `[`, Redis's hash-tag braces). A subject that cannot list keys must refuse with a typed
 * error, before touching its server.
 */
export function describePrefixQueryContract(subject: ContractSubject): void {
  describe(`queryPrefix: ${subject.name}`, () => {
    const sides = operatorSides(subject, 'prefix-query');
    const { key, instance } = sides;

    it('refuses a bad prefix or bad options with a typed error, before touching the server', async () => {
      await expect(sides.observer.queryPrefix('\n')).rejects.toBeInstanceOf(InvalidLockKeyError);
      await expect(sides.observer.queryPrefix('a', { limit: 0 })).rejects.toBeInstanceOf(InvalidLockOptionsError);
      await expect(sides.observer.queryPrefix('a', { limit: 1.5 })).rejects.toBeInstanceOf(InvalidLockOptionsError);
      await expect(sides.observer.queryPrefix('a', { cursor: 5 as unknown as string })).rejects.toBeInstanceOf(InvalidLockOptionsError);
      await expect(sides.observer.queryPrefix('a', { pageSize: 5 } as never)).rejects.toBeInstanceOf(InvalidLockOptionsError);
    });

    if (!subject.answersPrefixQuery) {
      it('refuses queryPrefix() with InvalidLockOptionsError', async () => {
        await expect(sides.observer.queryPrefix(key())).rejects.toBeInstanceOf(InvalidLockOptionsError);
      });
      return;
    }

    it('lists every held key under the prefix once, over pages, with its holder; none outside it; none once released', async () => {
      // Characters that are wildcards or delimiters somewhere: a backend that did not escape them would list the decoys.
      const specials = '%_*?[{}!';
      const stem = key();
      const base = `${stem}${specials}`;
      // An astral character right after the prefix: MariaDB's index range for a LIKE prefix left such keys out.
      const inside = ['a', 'b', 'c', 'd', '😀e'].map((suffix) => `${base}${suffix}`);
      // The same key with one of the special characters replaced: matched by an unescaped wildcard.
      const decoys = [...specials].map((_, i) => `${stem}${specials.slice(0, i)}Q${specials.slice(i + 1)}a`);
      const held: LockHandle[] = [];
      for (const each of [...inside, ...decoys]) held.push(await (await instance()).acquire(each, { ttl: 20_000 }));
      try {
        const { locks, pages } = await allPages(sides.observer, base, 2);
        // Five keys two at a time: at least three pages where a page holds at most `limit` (Redis may hold more).
        if (!subject.name.startsWith('redis')) expect(pages).toBeGreaterThanOrEqual(3);
        expect(locks.map((lock) => lock.key).sort()).toEqual([...inside].sort());
        for (const lock of locks) {
          const handle = held.find((each) => each.key === lock.key);
          expect(lock.held.map((holder) => holder.owner.id)).toEqual([handle?.owner]);
          expect(lock.held[0].fencingToken).toBe(handle?.fencingToken ?? null);
        }
        // With the default limit (100), as many pages as the backend needs (Redis: a page sees a bounded
        // share of the whole keyspace, so it may hold none of them) list the same.
        expect((await allPages(sides.observer, base, 100)).locks.map((lock) => lock.key).sort()).toEqual([...inside].sort());
      } finally {
        await Promise.all(held.map((handle) => handle.release()));
      }
      expect((await allPages(sides.observer, base, 2)).locks).toEqual([]);
    });

    it('names the writer and the waiters of a key under the prefix as query does', async () => {
      const base = `${key()}/`;
      const k = `${base}stock`;
      const holder = await (await instance()).acquire(k, { ttl: 20_000 });
      const waiting = (await instance()).acquire(k, { waitTimeout: 10_000 });
      try {
        // Once the waiter is in the backend's line (where it keeps one), the listing says what query says.
        let one = await sides.observer.query(k);
        for (const started = Date.now(); one.pending !== null && one.pending.length === 0 && Date.now() - started < 5_000; one = await sides.observer.query(k)) {
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        const { locks } = await allPages(sides.observer, base, 100);
        expect(locks.map((lock) => lock.key)).toEqual([k]);
        expect(locks[0].held.map((each) => each.owner.id)).toEqual([holder.owner]);
        expect(locks[0].pending?.map((each) => each.owner.id) ?? null).toEqual(one.pending?.map((each) => each.owner.id) ?? null);
      } finally {
        await holder.release();
        await (await waiting).release();
      }
    });
  });
}
