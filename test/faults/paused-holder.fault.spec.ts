import { randomUUID } from 'node:crypto';
import { LockAcquireTimeoutError, LockManager, LockService } from '@app/distributed-lock';
import { subjectNamed } from '../contract/subjects';
import { expectPausedHolderFenced } from '../support/fault-scenarios';
import { FencedResource } from '../support/fenced-resource';
import { startHolder } from '../support/holder-process';

const run = randomUUID().slice(0, 8);

/**
 * The slow-holder problem of the seeds: a holder paused (GC, swap, SIGSTOP) past its lease wakes up
 * believing it still holds the lock. Leases let the next holder in; fencing tokens make the store refuse
 * the late write; the lock's signal tells the woken holder at once.
 */
describe('A holder frozen with SIGSTOP past its lease', () => {
  const cases: Array<[subject: string, holderTtlMs: number, takeoverWithinMs: number]> = [
    ['redis (fair)', 1_000, 10_000],
    ['redis (barging)', 1_000, 10_000],
    ['row (MariaDB)', 1_000, 10_000],
    ['row (SQLite)', 1_000, 10_000],
    ['etcd (single node)', 2_000, 15_000],
    // The lock frees when the frozen client's session (4 s) times out on the server.
    ['zookeeper (standalone)', 2_000, 20_000],
  ];
  for (const [subject, holderTtlMs, takeoverWithinMs] of cases) {
    it(`${subject}: the next holder gets in, the woken holder's signal aborts and its write is refused`, async () => {
      await expectPausedHolderFenced(subject, `fault:${run}:sigstop:${subject}`, { holderTtlMs, takeoverWithinMs });
    }, 60_000);
  }

  it('pessimistic (MariaDB): the database keeps the frozen holder\'s row lock, so nobody else gets in', async () => {
    const key = `fault:${run}:sigstop:pessimistic`;
    const resource = new FencedResource();
    await resource.reset(key);
    const holder = await startHolder('pessimistic (MariaDB)', key, 1_000, { fencedResource: key });
    const manager = new LockManager(await subjectNamed('pessimistic (MariaDB)').create());
    const locks = new LockService(manager);
    try {
      await holder.waitForLine(/^write accepted/, 10_000);
      process.kill(holder.child.pid as number, 'SIGSTOP');
      // Past the lease: still excluded (a row lock has no lease on the server), with a typed, bounded error.
      await expect(locks.acquire(key, { waitTimeout: 2_500 })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
      process.kill(holder.child.pid as number, 'SIGCONT');
      // Its connection closing (here: the process killed) is what frees the row lock.
      holder.child.kill('SIGKILL');
      await holder.exited;
      const lock = await locks.acquire(key, { waitTimeout: 10_000 });
      expect(lock.fencingToken).toBeGreaterThan(holder.fencingToken as number);
      await lock.release();
    } finally {
      holder.child.kill('SIGKILL');
      await manager.close();
      await resource.close();
    }
  }, 60_000);
});
