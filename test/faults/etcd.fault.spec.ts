import { randomUUID } from 'node:crypto';
import { DistributedLockError, LockAcquireTimeoutError, LockManager, LockService } from '@app/distributed-lock';
import { EtcdLockStrategy } from '@app/distributed-lock/strategies/etcd';
import { faults, startTopology, stopTopology } from '../../scripts/services';
import { subjectNamed } from '../contract/subjects';
import { startHolder } from '../support/holder-process';

const run = randomUUID().slice(0, 8);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('etcd faults', () => {
  it('a holder killed with SIGKILL frees the lock when its lease ends', async () => {
    const key = `fault:${run}:etcd-sigkill`;
    const holder = await startHolder('etcd (single node)', key, 2_000);
    const manager = new LockManager(await subjectNamed('etcd (single node)').create());
    const locks = new LockService(manager);
    try {
      await expect(locks.acquire(key, { waitTimeout: 2_500 })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
      holder.child.kill('SIGKILL');
      await holder.exited;
      const lock = await locks.acquire(key, { waitTimeout: 15_000 });
      expect(lock.fencingToken).toBeGreaterThan(holder.fencingToken as number);
      await lock.release();
    } finally {
      holder.child.kill('SIGKILL');
      await manager.close();
    }
  }, 40_000);

  describe('3-node cluster, members killed while locks are held and waiters queue', () => {
    let hosts: string[];

    beforeAll(async () => {
      hosts = (await startTopology('etcd3-faults')).value.split(',');
    }, 60_000);

    afterAll(async () => {
      await stopTopology('etcd3-faults');
    }, 30_000);

    it('never lets two holders in, through a leader kill and a follower kill', async () => {
      const managers = [0, 1, 2].map(() => new LockManager(new EtcdLockStrategy({ connection: { hosts } }), { operationTimeout: 3_000 }));
      const services = managers.map((manager) => new LockService(manager));
      let inside = 0;
      let violations = 0;
      let sections = 0;
      const untyped: unknown[] = [];
      let typedFailures = 0;
      const stopAt = Date.now() + 14_000;
      const contenders = Array.from({ length: 6 }, async (_, i) => {
        const locks = services[i % services.length];
        while (Date.now() < stopAt) {
          try {
            await locks.withLock(`fault:${run}:etcd-cluster`, async () => {
              inside += 1;
              if (inside > 1) violations += 1;
              await sleep(5);
              inside -= 1;
              sections += 1;
            }, { waitTimeout: 4_000, ttl: 3_000, autoExtend: true });
          } catch (error) {
            if (error instanceof DistributedLockError) typedFailures += 1;
            else untyped.push(error);
            await sleep(50);
          }
        }
      });
      const chaos = (async () => {
        await sleep(2_000);
        const leader = await faults.leader('etcd3-faults');
        expect(leader).toBeDefined();
        await faults.kill(leader as string);
        await sleep(3_000);
        await faults.restart(leader as string);
        await sleep(2_000);
        const newLeader = await faults.leader('etcd3-faults');
        const follower = faults.members('etcd3-faults').find((name) => name !== newLeader) as string;
        await faults.kill(follower);
        await sleep(3_000);
        await faults.restart(follower);
      })();
      await Promise.all([...contenders, chaos]);
      await Promise.all(managers.map((manager) => manager.close().catch(() => undefined)));
      expect(violations).toBe(0);
      expect(untyped).toEqual([]);
      expect(sections).toBeGreaterThan(50);
      process.stdout.write(`etcd cluster chaos: ${sections} sections, ${typedFailures} typed failures, 0 overlaps\n`);
    }, 60_000);
  });
});
