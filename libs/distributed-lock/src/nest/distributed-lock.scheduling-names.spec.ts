import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { ScheduleModule, Timeout } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { ScheduledLock } from './decorators/scheduled-lock.decorator';
import { DistributedLockModule } from './distributed-lock.module';
import { InMemoryLockStrategy } from '../strategies/in-memory/in-memory-lock.strategy';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Two unrelated jobs of one application whose classes share a name (a `TasksService` per feature module,
 * with the method name of @nestjs/schedule's own examples) get the same default lock name,
 * `TasksService.handleTimeout`. In a single instance, one of them then never runs: it is "skipped" as if
 * another instance had run it. docs/scheduled-jobs.md: mistakes fail at bootstrap naming `Class#method`;
 * here nothing fails and a job silently never runs.
 */
function tasksModule(feature: string, runs: string[]) {
  @Injectable()
  class TasksService {
    @Timeout(40)
    @ScheduledLock({ lockAtMostFor: 5_000, lockAtLeastFor: 1_000 })
    async handleTimeout(): Promise<void> {
      runs.push(feature);
    }
  }
  @Module({ providers: [TasksService] })
  class FeatureModule {}
  return FeatureModule;
}

describe('@ScheduledLock default names of two unrelated jobs', () => {
  it('runs both jobs of a single instance, or fails the bootstrap naming the shared lock name', async () => {
    const runs: string[] = [];
    const moduleRef = Test.createTestingModule({
      imports: [
        ScheduleModule.forRoot(),
        DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy() }, logEvents: false }),
        tasksModule('billing', runs),
        tasksModule('mailing', runs),
      ],
    });
    let bootstrap = 'ok';
    const app = await moduleRef.compile();
    try {
      await app.init();
    } catch (error) {
      bootstrap = `${(error as Error).name}: ${(error as Error).message}`;
    }
    await sleep(300);
    await app.close();
    if (bootstrap === 'ok') {
      expect(runs.sort()).toEqual(['billing', 'mailing']);
    } else {
      expect(bootstrap).toMatch(/InvalidLockOptionsError.*TasksService\.handleTimeout/);
    }
  });
});
