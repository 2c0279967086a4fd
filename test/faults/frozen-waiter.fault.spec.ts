import { randomUUID } from 'node:crypto';
import { LockManager, LockService } from '@app/distributed-lock';
import { subjectNamed } from '../contract/subjects';
import { spawnHolder, type WaitingHolderProcess } from '../support/holder-process';

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

/** Resolves once the waiter prints that it holds the lock; fails saying why if it exited instead. */
async function heldBy(waiter: WaitingHolderProcess, timeoutMs: number): Promise<number> {
  const outcome = await lineOf(waiter.lines, /^held /, timeoutMs, waiter.exited);
  expect(outcome, `the waiter exited (${'exit' in outcome ? outcome.exit : ''}) instead of taking the free lock: ${waiter.stderr()}`).toHaveProperty('line');
  return 'at' in outcome ? outcome.at : Infinity;
}

async function stop(waiter: WaitingHolderProcess, manager: LockManager): Promise<void> {
  waiter.child.kill('SIGCONT');
  waiter.child.kill('SIGKILL');
  await waiter.exited;
  await manager.close();
}

/**
 * A process waiting for a lock is frozen (SIGSTOP: a GC pause, a laptop lid, a throttled container) for
 * longer than its lease or session, and the holder releases meanwhile. Woken, it must get the lock: its
 * wait ends at its waitTimeout or with the lock, never early, and never with "held by another owner" while
 * the lock is free (issue 42, items 1, 6 and 14).
 */
// The three at once (about 7 s each): each freezes only its own waiter, on a server of its own.
describe.concurrent('A waiter frozen with SIGSTOP past its lease while the holder releases', () => {
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
        const heldAt = await heldBy(waiter, 20_000);
        // Well within what is left of its wait: it did not wait for its waitTimeout to run out.
        expect(heldAt - wokenAt).toBeLessThan(8_000);
      } finally {
        await stop(waiter, manager);
      }
    }, 60_000);
  }
});

/**
 * Frozen again and again, each time for a little longer than one bound of a server call (the operation
 * timeout, shortened to 500 ms here): a call in flight when the process stopped had its answer in the socket
 * long before the process could read it, so the bound must count the time the process ran, not the time
 * that passed. Each freeze catches a call in flight about one time in three; the waiter must neither fail
 * with LockBackendUnavailableError nor give up its wait, and gets the lock once the holder releases.
 */
describe('A waiter frozen repeatedly for about one operation timeout', () => {
  const operationTimeoutMs = 500;
  const freezes = 12;
  const subject = 'row (MariaDB)';
  it(`${subject}: keeps waiting through ${freezes} freezes of ${operationTimeoutMs + 10} ms, and gets the lock once it is free`, async () => {
    const key = `fault:${run}:stalled-waiter:${subject}`;
    const manager = new LockManager(await subjectNamed(subject).create());
    const locks = new LockService(manager);
    const holder = await locks.acquire(key, { ttl: 30_000 });
    const waiter = spawnHolder(subject, key, 5_000, { LOCK_HOLDER_OPERATION_TIMEOUT: String(operationTimeoutMs) });
    try {
      await lineOf(waiter.lines, /^acquiring$/, 30_000, waiter.exited);
      await sleep(500);
      // kill() answers false once the waiter has exited: the assertion below says why it did.
      for (let freeze = 0; freeze < freezes && waiter.child.kill('SIGSTOP'); freeze += 1) {
        await sleep(operationTimeoutMs + 10);
        waiter.child.kill('SIGCONT');
        // Long enough for a few tries between freezes.
        await sleep(40 + Math.floor(Math.random() * 40));
      }
      await holder.release();
      await heldBy(waiter, 15_000);
    } finally {
      await stop(waiter, manager);
    }
  }, 60_000);
});
