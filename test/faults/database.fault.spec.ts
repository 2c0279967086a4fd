import { randomUUID } from 'node:crypto';
import { expectKilledHolderFreed } from '../support/fault-scenarios';

const run = randomUUID().slice(0, 8);

describe('Database faults: a crashed holder', () => {
  it('row (MariaDB): a holder killed with SIGKILL frees the lock when its lease (1 s) ends', async () => {
    await expectKilledHolderFreed('row (MariaDB)', `fault:${run}:row-mysql`, { holderTtlMs: 1_000, busyWaitMs: 1_500, freeWithinMs: 10_000 });
  }, 40_000);

  it('row (SQLite): a holder killed with SIGKILL frees the lock when its lease (1 s) ends', async () => {
    await expectKilledHolderFreed('row (SQLite)', `fault:${run}:row-sqlite`, { holderTtlMs: 1_000, busyWaitMs: 1_500, freeWithinMs: 10_000 });
  }, 40_000);

  it('pessimistic (MariaDB): a holder killed with SIGKILL frees the row lock as soon as its connection dies, long before its lease (30 s)', async () => {
    await expectKilledHolderFreed('pessimistic (MariaDB)', `fault:${run}:pessimistic`, { holderTtlMs: 30_000, busyWaitMs: 1_000, freeWithinMs: 5_000 });
  }, 40_000);

  // PostgreSQL and GET_LOCK: the server ends the dead client's backend (its socket closes), and with it the
  // transaction (FOR UPDATE) or the session (advisory locks). The row strategy's lease on PostgreSQL is the
  // promises suite's "crashed holder's fractional lease", and the advisory transaction scope frees its lock
  // the same way as the session scope here.
  for (const subject of ['pessimistic (PostgreSQL)', 'advisory (PostgreSQL)', 'advisory GET_LOCK (MariaDB)']) {
    it(`${subject}: a holder killed with SIGKILL frees the lock as soon as its connection dies, long before its lease (30 s)`, async () => {
      await expectKilledHolderFreed(subject, `fault:${run}:${subject}`, { holderTtlMs: 30_000, busyWaitMs: 1_000, freeWithinMs: 5_000 });
    }, 40_000);
  }
});
