// query on the database strategies never names a hold that had ended before the query was sent. A holder
// takes and releases the key in a loop on one pooled connection (so each grant reuses the connection the
// fence row names, and the row is its previous grant's until the new grant writes it); an observer of its
// own queries in a tight loop. A holder shown by its connection alone ("MySQL connection <id>",
// "PostgreSQL connection <pid>": caught in its grant statement, before its row is written), or held without
// saying by whom ("MySQL holder without a mark": a pessimistic hold inside its grant or release, before it
// marks itself or after it let its mark go) is a truthful answer, not a named hold.
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import type { DataSourceOptions } from 'typeorm';
import { LockManager, LockService } from '@app/distributed-lock';
import { AdvisoryLockStrategy, PessimisticLockStrategy } from '@app/distributed-lock/strategies/database';

const run = randomUUID().slice(0, 8);
const pg = (poolSize: number): DataSourceOptions => ({ type: 'postgres', url: process.env.LOCK_TEST_POSTGRES_URL, poolSize, connectTimeoutMS: 5_000 });
const my = (poolSize: number): DataSourceOptions => ({ type: 'mysql', url: process.env.LOCK_TEST_MYSQL_URL, poolSize, connectTimeout: 5_000 });

interface Hold { owner: string; token: number; start: number; end: number }

const cases = [
  { name: 'pessimistic PostgreSQL', make: (pool: number, n: string) => new PessimisticLockStrategy({ connection: pg(pool), name: n, maxHeldConnections: 1 }) },
  { name: 'advisory PostgreSQL', make: (pool: number, n: string) => new AdvisoryLockStrategy({ connection: pg(pool), name: n, maxHeldConnections: 1, holders: true }) },
  { name: 'advisory MariaDB', make: (pool: number, n: string) => new AdvisoryLockStrategy({ connection: my(pool), name: n, maxHeldConnections: 1 }) },
  { name: 'pessimistic MariaDB holders', make: (pool: number, n: string) => new PessimisticLockStrategy({ connection: my(pool), name: n, maxHeldConnections: 1, holders: true }) },
];

describe.each(cases)('query of a database lock held anew on the same connection: $name', ({ make }) => {
  it('never names a holder whose hold ended before the query was sent', async () => {
    const holderManager = new LockManager(make(2, 'adv-holder'));
    const observerManager = new LockManager(make(4, 'adv-observer'));
    const holder = new LockService(holderManager);
    const observer = new LockService(observerManager);
    const key = `adv-stale:${run}`;
    const holds: Hold[] = [];
    const bad: string[] = [];
    let queries = 0;
    const seen: Array<{ sent: number; returned: number; owner: string; token: number }> = [];
    let named = 0;
    let stop = false;
    try {
      await holder.acquire(key).then((l) => l.release());
      const loop = (async () => {
        for (const until = Date.now() + 6_000; Date.now() < until; ) {
          const start = Date.now();
          const lock = await holder.acquire(key, { waitTimeout: 5_000, reentrant: false });
          const h: Hold = { owner: lock.owner, token: lock.fencingToken as number, start, end: Infinity };
          holds.push(h);
          await lock.release();
          h.end = Date.now();
        }
        stop = true;
      })();
      const watch = async (): Promise<void> => {
        while (!stop) {
          const sent = Date.now();
          const info = await observer.query(key);
          queries += 1;
          const returned = Date.now();
          for (const held of info.held) {
            named += 1;
            seen.push({ sent, returned, owner: held.owner.id, token: held.fencingToken as number });
          }
        }
      };
      await Promise.all([loop, watch(), watch(), watch()]);
      let byOwnerId = 0;
      for (const q of seen) {
        const h = holds.find((x) => x.token === q.token && x.owner === q.owner);
        if (!h) { if (!/^(MySQL|PostgreSQL) (connection \d+|holder without a mark)$/.test(q.owner)) bad.push(`unknown holder ${q.owner} token ${q.token}`); continue; }
        byOwnerId += 1;
        if (h.end < q.sent) bad.push(`named token ${h.token} whose release resolved ${q.sent - h.end} ms before the query was sent`);
        if (h.start > q.returned) bad.push(`named token ${h.token} whose acquire started after the query returned`);
      }
      console.log(`${holds.length} holds, ${queries} queries, ${named} named (${byOwnerId} by owner id), ${bad.length} bad`, bad.slice(0, 5));
      expect(bad).toEqual([]);
      // A query that never names a holder by its owner would pass the check above.
      expect(byOwnerId).toBeGreaterThan(0);
    } finally {
      await Promise.all([holderManager.close(), observerManager.close()]);
    }
  }, 30_000);
});
