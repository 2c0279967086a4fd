import { randomUUID } from 'node:crypto';
import { LockManager, LockService } from '@app/distributed-lock';
import { subjectNamed } from '../contract/subjects';
import { spawnHolder } from '../support/holder-process';

const run = randomUUID().slice(0, 8);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function lineOf(lines: readonly string[], pattern: RegExp, timeoutMs: number, exited: Promise<string>): Promise<{ line: string; at: number } | { exit: string }> {
  let exit: string | undefined;
  void exited.then((how) => (exit = how));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const line = lines.find((candidate) => pattern.test(candidate));
    if (line !== undefined) return { line, at: Date.now() };
    if (exit !== undefined) return { exit };
    if (Date.now() > deadline) throw new Error(`no line matching ${pattern} within ${timeoutMs} ms; printed: ${lines.join(' | ')}`);
    await sleep(10);
  }
}

/**
 * A process waiting for a lock is frozen (SIGSTOP: a GC pause, a laptop lid, a throttled container) for
 * longer than its lease or session, and the holder releases meanwhile. Woken, it must get the lock: its
 * wait ends at its waitTimeout or with the lock, never early, and never with "held by another owner" while
 * the lock is free (issue 42, items 1, 6 and 14).
 */
describe('A waiter frozen with SIGSTOP past its lease while the holder releases', () => {
  // [subject, the waiter's ttl (ms), how long it stays frozen (ms)]
  const cases: Array<[subject: string, ttlMs: number, frozenMs: number]> = [
    ['redis (fair)', 2_000, 5_000],
    ['row (MariaDB)', 2_000, 5_000],
    ['etcd (single node)', 2_000, 6_000],
  ];
  for (const [subject, ttlMs, frozenMs] of cases) {
    it(`${subject}: gets the lock once woken, within its waitTimeout (20 s)`, async () => {
      const key = `fault:${run}:frozen-waiter:${subject}`;
      const manager = new LockManager(await subjectNamed(subject).create());
      const locks = new LockService(manager);
      const holder = await locks.acquire(key, { ttl: 10_000 });
      const waiter = spawnHolder(subject, key, ttlMs);
      try {
        await lineOf(waiter.lines, /^acquiring$/, 30_000, waiter.exited);
        // Queued by now (a round trip or two after it said so).
        await sleep(1_000);
        process.kill(waiter.child.pid as number, 'SIGSTOP');
        await sleep(1_000);
        await holder.release();
        await sleep(frozenMs - 1_000);
        process.kill(waiter.child.pid as number, 'SIGCONT');
        const wokenAt = Date.now();
        const outcome = await lineOf(waiter.lines, /^held /, 20_000, waiter.exited);
        expect(outcome, `the waiter exited (${'exit' in outcome ? outcome.exit : ''}) instead of taking the free lock`).toHaveProperty('line');
        // Well within what is left of its wait: it did not wait for its waitTimeout to run out.
        expect('at' in outcome ? outcome.at - wokenAt : Infinity).toBeLessThan(8_000);
      } finally {
        waiter.child.kill('SIGCONT');
        waiter.child.kill('SIGKILL');
        await waiter.exited;
        await manager.close();
      }
    }, 60_000);
  }
});
