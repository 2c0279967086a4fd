import { randomUUID } from 'node:crypto';
import { LockManager, LockService, ScheduledLockEvents } from '@app/distributed-lock';
import { ScheduledJobRunner } from '../../libs/distributed-lock/src/scheduling/scheduled-job-runner';
import { RedlockStrategy } from '@app/distributed-lock/strategies/redis';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Redlock survives a minority of masters down or slow. `lockAtLeastFor` keeps a fast job's lock by
 * shortening its lease with an extension (`releaseAfter`); that extension must not turn a slow minority
 * master into a "lost" lock.
 */
describe('Redlock: lockAtLeastFor with one of three masters frozen', () => {
  const servers: PrivateRedis[] = [];
  const managers: LockManager[] = [];
  const instance = (): LockService => {
    const manager = new LockManager(new RedlockStrategy({ connections: servers.map((server) => server.url) }));
    managers.push(manager);
    return new LockService(manager);
  };

  beforeAll(async () => {
    for (let i = 0; i < 3; i += 1) servers.push(await startPrivateRedis());
  }, 30_000);

  afterAll(async () => {
    servers[2].thaw();
    await Promise.all(managers.map((manager) => manager.close().catch(() => undefined)));
    await Promise.all(servers.map((server) => server.stop()));
  });

  it('a run that ended inside lockAtLeastFor finishes as run, and keeps the lock for the rest of it', async () => {
    const job = `report-${randomUUID().slice(0, 8)}`;
    const here = instance();
    const elsewhere = instance();
    const events = new ScheduledLockEvents();
    const runner = new ScheduledJobRunner({ job, service: here, options: { lockAtMostFor: 5_000, lockAtLeastFor: 2_000, perRun: false }, events });
    // The other instance's connections are open before the check below, which must come inside lockAtLeastFor.
    await (await elsewhere.acquire(`${job}:warm-up`)).release();
    // A minority master stops answering (a stop-the-world pause): the other two still make a majority.
    servers[2].freeze();
    const outcome = runner.run(async () => {
      await sleep(230); // ends inside lockAtLeastFor: the lease is shortened to the rest of it, 1.77 s
      return 'done';
    });
    const settled = await outcome.then(
      (run) => (run.ran ? `ran: ${String(run.value)}` : 'skipped'),
      (error: unknown) => `${(error as Error).name}: ${(error as Error).message}`,
    );
    expect(settled).toBe('ran: done');
    // The lock is indeed still held for the rest of lockAtLeastFor: another instance's fire skips.
    expect((await elsewhere.tryAcquire(job)) === null ? 'skipped' : 'ran again').toBe('skipped');
  }, 30_000);
});
