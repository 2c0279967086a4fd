import { Injectable } from '@nestjs/common';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { validateLockKey } from '../../locking/lock-key';
import { cronFireSchedule } from '../../scheduling/cron-fire-schedule';
import { intervalSchedule, type FireSchedule } from '../../scheduling/fire-time';
import { ScheduledJobRunner } from '../../scheduling/scheduled-job-runner';
import { validateScheduledLockOptions } from '../../scheduling/scheduled-lock-options';
import { lockServiceOf, type DistributedLockFeature } from '../distributed-lock-feature';
import type { ScheduledLockMetadata } from '../decorators/scheduled-lock.decorator';
import { LockMetadataAccessor, type MethodSchedule } from '../explorer/lock-metadata.accessor';
import { LockRegistry } from '../lock-registry';

type AnyMethod = (this: unknown, ...args: unknown[]) => unknown;

/** A fire time far from any edge case, to check at bootstrap that a per-run key fits the strategy. */
const SAMPLE_FIRE_TIME = '@2000-01-01T00:00:00.000Z';

/**
 * Builds the wrapper of one `@ScheduledLock` method: its options checked, its strategy and prefix
 * chosen (per decorator, else per `forFeature` module, else the application default), its fire schedule
 * read from `@nestjs/schedule`'s metadata when `perRun` needs it. Mistakes fail the bootstrap naming
 * `Class#method`.
 */
@Injectable()
export class ScheduledLockBinder {
  constructor(
    private readonly accessor: LockMetadataAccessor,
    private readonly registry: LockRegistry,
  ) {}

  /**
   * The method that runs `method` under the job's lock. `decorated` is the method as found on the class
   * (it carries the schedule's metadata).
   */
  wrap(method: AnyMethod, metadata: ScheduledLockMetadata, decorated: object, feature: DistributedLockFeature | undefined, where: string): AnyMethod {
    const path = `${where} @ScheduledLock options`;
    const options = validateScheduledLockOptions(metadata.options, path, ['strategy']);
    const strategyName = metadata.options.strategy;
    if (strategyName !== undefined && typeof strategyName !== 'string') {
      throw new InvalidLockOptionsError(`${path}.strategy`, 'expected a registered strategy name.');
    }
    const service = lockServiceOf(this.registry, feature, strategyName, where);
    const job = options.name ?? `${metadata.className}.${metadata.methodName}`;
    const fullKey = validateLockKey(service.prefix + job + (options.perRun ? SAMPLE_FIRE_TIME : ''), `${where} @ScheduledLock key with its prefix "${service.prefix}"`);
    this.registry.manager(service.strategyName, where).strategy.validateKey?.(fullKey);
    this.registry.claimScheduledJob(service.strategyName, service.prefix + job, decorated, where);
    const schedule = options.perRun ? this.fireSchedule(this.accessor.schedule(decorated), where) : undefined;
    const runner = new ScheduledJobRunner({ job, service, options, schedule, events: this.registry.scheduledLockEvents, spans: this.registry.rootSpans });
    const registry = this.registry;
    return function scheduledLockMethod(this: unknown, ...args: unknown[]): Promise<unknown> {
      // The scheduler logs what a run throws, stack and all: the lock's key shown there as `logKeys` says.
      return runner.run(() => method.apply(this, args)).then(
        (run) => (run.ran ? run.value : undefined),
        (error: unknown) => {
          throw registry.forLog(error);
        },
      );
    };
  }

  private fireSchedule(schedule: MethodSchedule | undefined, where: string): FireSchedule {
    if (!schedule) {
      throw new InvalidLockOptionsError(
        `${where} @ScheduledLock perRun`,
        'a per-run lock needs the fire time of each run: put it on a @Cron or an @Interval method (from @nestjs/schedule).',
      );
    }
    if (schedule.kind === 'timeout') {
      throw new InvalidLockOptionsError(
        `${where} @ScheduledLock perRun`,
        'a @Timeout fires once per process, at a time no two instances share, so it has no fire time to lock per run. ' +
          'Leave perRun out and keep the lock with lockAtLeastFor for as long as instances may start apart.',
      );
    }
    return schedule.kind === 'cron' ? cronFireSchedule(schedule.cron, where) : intervalSchedule(schedule.periodMs);
  }
}
