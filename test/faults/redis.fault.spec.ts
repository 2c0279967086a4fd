import {
  LockAcquireTimeoutError,
  LockBackendUnavailableError,
  LockManager,
  LockService,
} from '@app/distributed-lock';
import { RedlockStrategy } from '@app/distributed-lock/strategies/redis';
import { randomUUID } from 'node:crypto';
import { faults, startTopology, stopTopology } from '../../scripts/services';
import { startHolder } from '../support/holder-process';

const run = randomUUID().slice(0, 8);

describe('Redis faults: a crashed holder', () => {
  for (const subject of ['redis (fair)', 'redis (barging)', 'redlock (5 masters)']) {
    it(`${subject}: a holder killed with SIGKILL frees the lock when its lease ends`, async () => {
      const key = `fault:${run}:sigkill:${subject}`;
      const holder = await startHolder(subject, key, 1_000);
      const { subjectNamed } = await import('../contract/subjects');
      const manager = new LockManager(await subjectNamed(subject).create());
      const locks = new LockService(manager);
      try {
        // While the holder lives, its watchdog keeps the lease: nobody else gets in.
        await expect(locks.acquire(key, { waitTimeout: 1_500 })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
        holder.child.kill('SIGKILL');
        await holder.exited;
        const killedAt = Date.now();
        const lock = await locks.acquire(key, { waitTimeout: 10_000 });
        // Freed by the lease (1 s), not by anything the dead process did.
        expect(Date.now() - killedAt).toBeLessThan(10_000);
        if (holder.fencingToken !== undefined) expect(lock.fencingToken).toBeGreaterThan(holder.fencingToken);
        await lock.release();
      } finally {
        holder.child.kill('SIGKILL');
        await manager.close();
      }
    });
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
