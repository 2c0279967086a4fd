import { randomUUID } from 'node:crypto';
import { LockManager, LockService, ScheduledLockEvents } from '@app/distributed-lock';
import { ScheduledJobRunner } from '../../libs/distributed-lock/src/scheduling/scheduled-job-runner';
import { RedisLockStrategy } from '@app/distributed-lock/strategies/redis';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis';

/**
 * `ScheduledJobRunner.run` (what `@ScheduledLock` calls per fire) rejects "with the lock service's error
 * when the backend could not be asked (the run did not happen)", and docs/scheduled-jobs.md: a fire
 * rejected with `LockBackendUnavailableError` did not run the job. A job that did run must not be
 * reported that way because its release afterwards failed (the lease ends the lock by itself, as
 * `withLock` treats a failed release).
 */
describe('ScheduledJobRunner: the store stops answering after the job ran', () => {
  let redis: PrivateRedis;
  let manager: LockManager;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    manager = new LockManager(new RedisLockStrategy({ connection: redis.url }), { operationTimeout: 300 });
  });

  afterAll(async () => {
    redis.thaw();
    await manager.close().catch(() => undefined);
    await redis.stop();
  });

  it('resolves the run it made (ran: true), and reports the failed release as a background error', async () => {
    const events = new ScheduledLockEvents();
    const finished: unknown[] = [];
    events.on('finished', (event) => finished.push(event.error));
    const background: string[] = [];
    manager.events.on('backgroundError', (event) => background.push(event.operation));
    const runner = new ScheduledJobRunner({
      job: `digest-${randomUUID().slice(0, 8)}`,
      service: new LockService(manager),
      options: { lockAtMostFor: 5_000, lockAtLeastFor: 0, perRun: false },
      events,
    });
    let ran = 0;
    const outcome = await runner
      .run(() => {
        ran += 1;
        redis.freeze(); // the store stops answering as the job ends (a pause, a failover)
        return 'sent';
      })
      .then(
        (run) => (run.ran ? `ran: ${String(run.value)}` : 'skipped'),
        (error: unknown) => `${(error as Error).name}`,
      );
    redis.thaw();
    expect(ran).toBe(1);
    expect(outcome).toBe('ran: sent');
    expect(finished).toEqual([undefined]);
    expect(background).toContain('release');
  }, 20_000);
});
