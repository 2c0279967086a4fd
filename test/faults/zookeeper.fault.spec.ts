import { randomUUID } from 'node:crypto';
import { DistributedLockError, LockAcquireTimeoutError, LockManager, LockService } from '@app/distributed-lock';
import { ZooKeeperLockStrategy } from '@app/distributed-lock/strategies/zookeeper';
import { faults, startTopology, stopTopology } from '../../scripts/services';
import { subjectNamed } from '../contract/subjects';
import { startHolder } from '../support/holder-process';

const run = randomUUID().slice(0, 8);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('ZooKeeper faults', () => {
  it('a holder killed with SIGKILL frees the lock when its session times out', async () => {
    const key = `fault:${run}:zk-sigkill`;
    // The holder keeps a long lease: only the end of its session (4 s) can free the lock.
    const holder = await startHolder('zookeeper (standalone)', key, 60_000);
    const manager = new LockManager(await subjectNamed('zookeeper (standalone)').create());
    const locks = new LockService(manager);
    try {
      await expect(locks.acquire(key, { waitTimeout: 1_500 })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
      holder.child.kill('SIGKILL');
      await holder.exited;
      const killedAt = Date.now();
      const lock = await locks.acquire(key, { waitTimeout: 20_000 });
      expect(Date.now() - killedAt).toBeLessThan(15_000);
      expect(lock.fencingToken).toBeGreaterThan(holder.fencingToken as number);
      await lock.release();
    } finally {
      holder.child.kill('SIGKILL');
      await manager.close();
    }
  }, 60_000);

  describe('3-node ensemble, leader killed while locks are held and waiters queue', () => {
    let connect: string;

    beforeAll(async () => {
      connect = (await startTopology('zookeeper3-faults')).value;
    }, 90_000);

    afterAll(async () => {
      await stopTopology('zookeeper3-faults');
    }, 30_000);

    it('never lets two holders in; held locks survive the election or are reported lost', async () => {
      const managers = [0, 1, 2].map(() => new LockManager(new ZooKeeperLockStrategy({ connect, sessionTimeout: 6_000 }), { operationTimeout: 4_000 }));
      const services = managers.map((manager) => new LockService(manager));
      let lost = 0;
      for (const manager of managers) manager.events.on('lost', () => (lost += 1));
      let inside = 0;
      let violations = 0;
      let sections = 0;
      let typedFailures = 0;
      const untyped: unknown[] = [];
      const stopAt = Date.now() + 14_000;
      const contenders = Array.from({ length: 6 }, async (_, i) => {
        const locks = services[i % services.length];
        while (Date.now() < stopAt) {
          try {
            await locks.withLock(`fault:${run}:zk-ensemble`, async () => {
              inside += 1;
              if (inside > 1) violations += 1;
              await sleep(5);
              inside -= 1;
              sections += 1;
            }, { waitTimeout: 5_000 });
          } catch (error) {
            if (error instanceof DistributedLockError) typedFailures += 1;
            else untyped.push(error);
            await sleep(50);
          }
        }
      });
      const chaos = (async () => {
        await sleep(3_000);
        const leader = await faults.leader('zookeeper3-faults');
        expect(leader).toBeDefined();
        await faults.kill(leader as string);
        await sleep(5_000);
        await faults.restart(leader as string);
      })();
      await Promise.all([...contenders, chaos]);
      await Promise.all(managers.map((manager) => manager.close().catch(() => undefined)));
      expect(violations).toBe(0);
      expect(untyped).toEqual([]);
      expect(sections).toBeGreaterThan(50);
      process.stdout.write(`zookeeper ensemble chaos: ${sections} sections, ${typedFailures} typed failures, ${lost} locks reported lost, 0 overlaps\n`);
    }, 90_000);
  });
});
