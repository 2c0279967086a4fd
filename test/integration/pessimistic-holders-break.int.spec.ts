// breakLock on the pessimistic strategy on MariaDB (`holders: true`) when the holder it named lets go before
// its KILL reaches the server: KILL takes no condition, so what that connection holds next is ended instead,
// as docs/operations.md says. That holder is told at once (`session-ended`), its transaction's writes roll
// back, and nobody else holds the key meanwhile: never two holders, never a silent loss.
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { LockManager, LockService, type Lock } from '@app/distributed-lock';
import { lockTransaction, PessimisticLockStrategy, type PessimisticLockStrategyOptions } from '@app/distributed-lock/strategies/database';
import { delayingProxy } from '../support/delaying-proxy';

const run = randomUUID().slice(0, 8);
const url = (): string => process.env.LOCK_TEST_MYSQL_URL as string;

describe('pessimistic strategy on MariaDB with holders: a break whose KILL arrives late', () => {
  const closing: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    await Promise.all(closing.splice(0).map((close) => close()));
  });
  const service = (options: PessimisticLockStrategyOptions): LockService => {
    const created = new LockManager(new PessimisticLockStrategy(options));
    closing.push(() => created.close());
    return new LockService(created);
  };

  it('ends the next hold of the connection it named, which is told session-ended and whose writes roll back', async () => {
    const proxy = await delayingProxy(url(), 'KILL CONNECTION', 400);
    closing.push(() => new Promise((resolve) => proxy.server.close(resolve)));
    const admin = new DataSource({ type: 'mysql', url: url(), poolSize: 2 });
    await admin.initialize();
    closing.push(async () => {
      await admin.query('DELETE FROM p_late_break_writes WHERE run_id = ?', [run]);
      await admin.destroy();
    });
    await admin.query('CREATE TABLE IF NOT EXISTS p_late_break_writes (run_id VARCHAR(16), hold VARCHAR(8))');
    // One connection slot: each hold takes the connection the last one gave back (mysql2's pool reuses the latest).
    const holder = service({ connection: { type: 'mysql', url: url(), poolSize: 2 }, name: 'p-late-holder', maxHeldConnections: 1, holders: true });
    const breaker = service({ connection: { type: 'mysql', url: proxy.url, poolSize: 2 }, name: 'p-late-breaker', holders: true });
    const key = `p-late-break:${run}`;
    await breaker.query(key);
    const section = (name: string, ms: number, held?: (lock: Lock) => void): Promise<string> =>
      holder
        .withLock(
          key,
          async (lock) => {
            held?.(lock);
            await lockTransaction(lock).query('INSERT INTO p_late_break_writes (run_id, hold) VALUES (?, ?)', [run, name]);
            await new Promise<void>((resolve) => {
              const timer = setTimeout(resolve, ms);
              lock.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()));
            });
            return lock.signal.aborted ? `aborted (${String((lock.signal.reason as { reason?: string } | undefined)?.reason)})` : 'completed';
          },
          { ttl: 10_000 },
        )
        .catch((error: { name?: string; reason?: string }) => `${error.name} ${error.reason}`);
    let first: Lock | undefined;
    const firstEnds = section('first', 150, (lock) => (first = lock));
    await expect.poll(() => first, { timeout: 5_000 }).toBeDefined();
    // Waits behind the first in this process, then takes the key on the same connection for 800 ms.
    const nextEnds = section('next', 800);
    const broken = await breaker.breakLock(key, { reason: 'looks stuck' });
    expect(broken.map((h) => h.fencingToken)).toEqual([first?.fencingToken]);
    expect([await firstEnds, await nextEnds]).toEqual(['completed', 'LockLostError session-ended']);
    // The first hold's write committed with its release; the next one's went with its session.
    expect(((await admin.query('SELECT hold FROM p_late_break_writes WHERE run_id = ? ORDER BY hold', [run])) as Array<{ hold: string }>).map((r) => r.hold)).toEqual(['first']);
    expect((await breaker.query(key)).held).toEqual([]);
  }, 20_000);
});
