import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Cron, ScheduleModule } from '@nestjs/schedule';
import { Test, type TestingModule } from '@nestjs/testing';
import { DistributedLockModule, LockManager, LockService, ScheduledLock, ScheduledLockEvents } from '@app/distributed-lock';
import { RedisLockStrategy } from '@app/distributed-lock/strategies/redis';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * What docs/operations.md promises of a scheduled job's lock: another instance's `query` of the job's name
 * names the instance that ran it, while `lockAtLeastFor` keeps it, with the time the run took the lock and
 * the time it is given back; then nobody.
 */
describe('a @ScheduledLock job, seen by query from another instance', () => {
  it('names the instance that ran it, when it took the lock and when it gives it back, while lockAtLeastFor keeps it; then nobody', async () => {
    const url = process.env.LOCK_TEST_REDIS_URL;
    if (!url) throw new Error('LOCK_TEST_REDIS_URL is not set: run through npm test');
    const job = `scheduled-query:${randomUUID().slice(0, 8)}`;
    const lockAtMostFor = 20_000;
    const lockAtLeastFor = 1_500;

    @Injectable()
    class Jobs {
      @Cron('* * * * * *')
      @ScheduledLock({ name: job, lockAtMostFor, lockAtLeastFor })
      async tick(): Promise<void> {}
    }

    const observerManager = new LockManager(new RedisLockStrategy({ connection: url }));
    const observer = new LockService(observerManager);
    let app: TestingModule | undefined;
    try {
      app = await Test.createTestingModule({
        imports: [ScheduleModule.forRoot(), DistributedLockModule.forRoot({ strategies: { default: new RedisLockStrategy({ connection: url }) }, instanceName: 'report-runner-1' })],
        providers: [Jobs],
      }).compile();
      const events = app.get(ScheduledLockEvents);
      let startedAt = 0;
      let beforeStart = 0;
      const finished = new Promise<void>((resolve) => events.once('finished', () => resolve()));
      events.once('started', () => (startedAt = Date.now()));
      await app.init();
      beforeStart = Date.now();
      await finished;
      const { held } = await observer.query(job);
      expect(held).toHaveLength(1);
      expect(held[0].owner.instance).toBe('report-runner-1');
      // Granted at most 1.1 s before the fire's start was seen (the cron's first second), and not after it.
      expect(held[0].grantedAt).toBeLessThanOrEqual(startedAt + 5);
      expect(held[0].grantedAt).toBeGreaterThanOrEqual(beforeStart - 1_100);
      // Run: the lease now ends when lockAtLeastFor gives the lock back, no longer lockAtMostFor after the grant.
      expect(Math.abs((held[0].expiresAt ?? 0) - ((held[0].grantedAt ?? 0) + lockAtLeastFor))).toBeLessThan(100);
      // Given back lockAtLeastFor after it was taken (the next fires skip meanwhile).
      await app.close();
      app = undefined;
      for (const started = Date.now(); (await observer.query(job)).held.length > 0 && Date.now() - started < 5_000; ) await sleep(50);
      expect((await observer.query(job)).held).toEqual([]);
    } finally {
      await app?.close();
      await observerManager.close();
    }
  }, 20_000);
});
