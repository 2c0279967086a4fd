import { randomUUID } from 'node:crypto';
import { LockBackendUnavailableError, LockManager, LockService } from '@app/distributed-lock';
import { RedlockStrategy } from '@app/distributed-lock/strategies/redis';
import { faults, startTopology, stopTopology } from '../../scripts/services';
import { expectKilledHolderFreed } from '../support/fault-scenarios';

const run = randomUUID().slice(0, 8);

describe('Redis faults: a crashed holder', () => {
  for (const subject of ['redis (fair)', 'redis (barging)', 'redlock (5 masters)']) {
    it(`${subject}: a holder killed with SIGKILL frees the lock when its lease (1 s) ends`, async () => {
      await expectKilledHolderFreed(subject, `fault:${run}:sigkill:${subject}`, { holderTtlMs: 1_000, busyWaitMs: 1_500, freeWithinMs: 10_000 });
    }, 40_000);
  }
});

describe('Redlock faults: masters down', () => {
  let urls: string[];
  let manager: LockManager;
  let locks: LockService;

  beforeAll(async () => {
    urls = (await startTopology('redis5-faults')).value.split(',');
    manager = new LockManager(new RedlockStrategy({ connections: urls }), { operationTimeout: 2_000 });
    locks = new LockService(manager);
  }, 60_000);

  afterAll(async () => {
    await manager?.close();
    await stopTopology('redis5-faults');
  });

  it('keeps granting with 2 of 5 masters killed, and refuses with a typed error once 3 are down', async () => {
    const members = faults.members('redis5-faults').sort();
    await faults.kill(members[0]);
    await faults.kill(members[1]);
    let sections = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let i = 0; i < 10; i += 1) {
          await locks.withLock(`fault:${run}:minority`, () => {
            sections += 1;
          }, { waitTimeout: 10_000 });
        }
      }),
    );
    expect(sections).toBe(40);

    await faults.kill(members[2]);
    const started = Date.now();
    const error = await locks.acquire(`fault:${run}:majority-down`, { waitTimeout: 3_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockBackendUnavailableError);
    expect((error as Error).message).toMatch(/majority/);
    // Typed error within the wait bound plus one operation timeout: never a hang.
    expect(Date.now() - started).toBeLessThan(3_000 + 2_000 + 1_000);

    for (const member of members.slice(0, 3)) await faults.restart(member);
    const lock = await locks.acquire(`fault:${run}:recovered`, { waitTimeout: 5_000 });
    expect(lock.isHeld).toBe(true);
    await lock.release();
  }, 60_000);
});
