import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { faults, startTopology, stopTopology } from '../../scripts/services';
import { contendInProcessesThroughChaos, expectKilledHolderFreed } from '../support/fault-scenarios';

const run = randomUUID().slice(0, 8);
const CONTENDER = join(__dirname, '..', 'support', 'zookeeper-contender.worker.ts');
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('ZooKeeper faults', () => {
  it('a holder killed with SIGKILL frees the lock when its session (4 s) times out', async () => {
    // The holder keeps a long lease: only the end of its session can free the lock.
    await expectKilledHolderFreed('zookeeper (standalone)', `fault:${run}:zk-sigkill`, { holderTtlMs: 60_000, busyWaitMs: 1_500, freeWithinMs: 15_000 });
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
      // Three app instances, each with its own client in its own process, as they are deployed: several
      // native clients in one process can abort it when their connections break together (the limit in
      // docs/strategies/zookeeper.md). A contender that dies is a failure of that contender, reported here.
      const outcome = await contendInProcessesThroughChaos(CONTENDER, ['app-1', 'app-2', 'app-3'], { ZK_CONNECT: connect }, `fault:${run}:zk-ensemble`, { contenders: 2, durationMs: 14_000, scenario: 'zookeeper ensemble: leader killed under 6 contenders in 3 processes' }, async () => {
        await sleep(3_000);
        const leader = await faults.leader('zookeeper3-faults');
        expect(leader).toBeDefined();
        await faults.kill(leader as string);
        await sleep(5_000);
        await faults.restart(leader as string);
      });
      expect(outcome.crashed).toEqual([]);
      expect(outcome.violations).toBe(0);
      expect(outcome.untyped).toEqual([]);
      expect(outcome.sections).toBeGreaterThan(50);
      process.stdout.write(`zookeeper ensemble chaos: ${outcome.sections} sections, ${outcome.typedFailures} typed failures, ${outcome.lost} locks reported lost, 0 overlaps\n`);
    }, 90_000);
  });
});
