import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { CronScheduleSource } from '../../scheduling/cron-fire-schedule';
import type { OptimisticRetryOptions } from '../../versioning/optimistic-retry';
import { LEADERSHIP_GAINED_METADATA, LEADERSHIP_LOST_METADATA, LIMITED_METADATA, LOCKED_METADATA, OPTIMISTIC_VERSION_METADATA, SCHEDULED_LOCK_METADATA } from '../distributed-lock.constants';
import type { LeadershipHookMetadata } from '../decorators/leadership-hooks.decorator';
import type { LimitedMetadata } from '../decorators/limited.decorator';
import type { LockedMetadata } from '../decorators/locked.decorator';
import type { ScheduledLockMetadata } from '../decorators/scheduled-lock.decorator';

/**
 * The metadata `@nestjs/schedule`'s `@Cron`, `@Interval` and `@Timeout` write (its own metadata keys; the
 * package does not export them). Pinned by `distributed-lock.scheduling.spec.ts` against the real decorators,
 * so that a change upstream fails our tests, not users' jobs.
 */
export const NEST_SCHEDULE_METADATA = Object.freeze({
  type: 'SCHEDULER_TYPE',
  cron: 'SCHEDULE_CRON_OPTIONS',
  interval: 'SCHEDULE_INTERVAL_OPTIONS',
  timeout: 'SCHEDULE_TIMEOUT_OPTIONS',
  /** Values of the type key. */
  types: Object.freeze({ cron: 1, timeout: 2, interval: 3 }),
});

/** How a method is scheduled by `@nestjs/schedule`, as far as a per-run lock needs it. */
export type MethodSchedule =
  | { readonly kind: 'cron'; readonly cron: CronScheduleSource }
  | { readonly kind: 'interval'; readonly periodMs: number }
  | { readonly kind: 'timeout'; readonly delayMs: number };

/** Every read of method metadata, ours and `@nestjs/schedule`'s, in one place. */
@Injectable()
export class LockMetadataAccessor {
  constructor(private readonly reflector: Reflector) {}

  locked(method: object): LockedMetadata | undefined {
    return this.reflector.get<LockedMetadata | undefined>(LOCKED_METADATA, method as () => unknown);
  }

  limited(method: object): LimitedMetadata | undefined {
    return this.reflector.get<LimitedMetadata | undefined>(LIMITED_METADATA, method as () => unknown);
  }

  optimisticVersion(method: object): OptimisticRetryOptions | undefined {
    return this.reflector.get<OptimisticRetryOptions | undefined>(OPTIMISTIC_VERSION_METADATA, method as () => unknown);
  }

  scheduledLock(method: object): ScheduledLockMetadata | undefined {
    return this.reflector.get<ScheduledLockMetadata | undefined>(SCHEDULED_LOCK_METADATA, method as () => unknown);
  }

  leadershipGained(method: object): LeadershipHookMetadata | undefined {
    return this.reflector.get<LeadershipHookMetadata | undefined>(LEADERSHIP_GAINED_METADATA, method as () => unknown);
  }

  leadershipLost(method: object): LeadershipHookMetadata | undefined {
    return this.reflector.get<LeadershipHookMetadata | undefined>(LEADERSHIP_LOST_METADATA, method as () => unknown);
  }

  /** The `@Cron` / `@Interval` / `@Timeout` schedule of a method, if it has one. */
  schedule(method: object): MethodSchedule | undefined {
    const read = <T>(key: string): T | undefined => this.reflector.get<T | undefined>(key, method as () => unknown);
    switch (read<number>(NEST_SCHEDULE_METADATA.type)) {
      case NEST_SCHEDULE_METADATA.types.cron: {
        const cron = read<CronScheduleSource>(NEST_SCHEDULE_METADATA.cron);
        return cron ? { kind: 'cron', cron } : undefined;
      }
      case NEST_SCHEDULE_METADATA.types.interval: {
        const periodMs = read<{ timeout?: number }>(NEST_SCHEDULE_METADATA.interval)?.timeout;
        return typeof periodMs === 'number' ? { kind: 'interval', periodMs } : undefined;
      }
      case NEST_SCHEDULE_METADATA.types.timeout: {
        const delayMs = read<{ timeout?: number }>(NEST_SCHEDULE_METADATA.timeout)?.timeout;
        return typeof delayMs === 'number' ? { kind: 'timeout', delayMs } : undefined;
      }
      default:
        return undefined;
    }
  }
}
