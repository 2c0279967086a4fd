import { LockCommitFailedError } from '../errors/lock-commit-failed.error';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import type { LockService } from '../locking/lock-service';
import { failedSection, lossOf } from '../locking/section-end';
import { LOCK_TELEMETRY } from '../telemetry/lock-telemetry-names';
import type { RootSpans } from '../telemetry/root-spans';
import type { FireSchedule } from './fire-time';
import type { ScheduledLockEvents, ScheduledRunEventBase } from './scheduled-lock-events';
import type { ResolvedScheduledLockOptions } from './scheduled-lock-options';

const { attributes } = LOCK_TELEMETRY;

/** What one scheduled job runs with. */
export interface ScheduledJobRunnerOptions {
  /** The job's lock name; the key, or the key's first part with `perRun`. */
  readonly job: string;
  /** The lock service (strategy, prefix) the job locks through. */
  readonly service: LockService;
  readonly options: Omit<ResolvedScheduledLockOptions, 'name'>;
  /** Required with `perRun`: how a run's fire time is found. */
  readonly schedule?: FireSchedule;
  readonly events: ScheduledLockEvents;
  /** With telemetry: each fire is a trace of its own (a `lock.scheduled_run` root span). */
  readonly spans?: RootSpans;
}

/** What became of one fire: skipped (the lock was held elsewhere), or run, with the job's result. */
export type ScheduledRun<T> = { readonly ran: false } | { readonly ran: true; readonly value: T };

/**
 * Runs one scheduled job at most once per cluster per fire: takes the job's lock without waiting (a fire
 * that finds it held is skipped, not queued), runs the job as the lock's holder (`currentLock()`,
 * `assertLocked()`), and then keeps the lock until `lockAtLeastFor` after it was taken. The lease is
 * `lockAtMostFor` and is never renewed: a run that outlasts it is told through the lock's signal and
 * ends with `LockLostError`. No Nest here: `@ScheduledLock` builds one per decorated method.
 */
export class ScheduledJobRunner {
  constructor(private readonly config: ScheduledJobRunnerOptions) {
    if (config.options.perRun && !config.schedule) {
      throw new InvalidLockOptionsError(`${config.job} perRun`, 'a per-run lock needs the job\'s schedule (a @Cron or an @Interval) to find its fire time.');
    }
  }

  /** The key a run starting at `now` (local clock, ms) locks, without the service's prefix. */
  keyAt(now: number): { key: string; fireTime: number | undefined } {
    const fireTime = this.config.options.perRun ? this.config.schedule?.fireTimeOf(now) : undefined;
    return { key: fireTime === undefined ? this.config.job : `${this.config.job}@${new Date(fireTime).toISOString()}`, fireTime };
  }

  /**
   * One fire of the job. Resolves `{ ran: false }` when the lock is held elsewhere, `{ ran: true, value }`
   * after the job ran; rejects with the job's error, with `LockLostError` when the lock was lost while
   * it ran (the job's error, if any, as its cause), or with the lock service's error when the backend
   * could not be asked (the run did not happen).
   */
  async run<T>(job: () => T | Promise<T>): Promise<ScheduledRun<T>> {
    const { spans, service } = this.config;
    if (!spans) return this.fire(job);
    const span = spans.start(LOCK_TELEMETRY.spans.scheduledRun, { [attributes.job]: this.config.job, [attributes.strategy]: service.strategyName });
    try {
      const run = await span.run(() => this.fire(job));
      span.end({ [attributes.runOutcome]: run.ran ? 'ran' : 'skipped' });
      return run;
    } catch (error) {
      span.end({ [attributes.runOutcome]: 'failed' }, error);
      throw error;
    }
  }

  private async fire<T>(job: () => T | Promise<T>): Promise<ScheduledRun<T>> {
    const { service, events, options } = this.config;
    const { key, fireTime } = this.keyAt(Date.now());
    const lock = await service.tryAcquire(key, { ttl: options.lockAtMostFor, autoExtend: false, reentrant: false });
    const base: ScheduledRunEventBase = { job: this.config.job, key: service.prefix + key, strategy: service.strategyName, fireTime };
    if (!lock) {
      events.emit('skipped', base);
      return { ran: false };
    }
    const takenAt = performance.now();
    events.emit('started', { ...base, fencingToken: lock.fencingToken });
    let value: T | undefined;
    let failure: { error: unknown } | undefined;
    try {
      value = await service.runAsHolder(lock, job);
    } catch (error) {
      failure = { error };
    }
    const durationMs = Math.round(performance.now() - takenAt);
    const keptForMs = lossOf(lock) ? 0 : this.keptFor(takenAt, fireTime);
    try {
      await lock.releaseAfterWith(keptForMs, failure ? 'failed' : 'completed');
    } catch (error) {
      // A failed commit of the lock's own transaction is the run's outcome. Any other failure to release
      // (an unreachable store) does not undo the run: reported, and the lease frees the lock by itself.
      if (error instanceof LockCommitFailedError) failure ??= { error };
      else service.events.emit('backgroundError', { strategy: service.strategyName, key: service.prefix + key, operation: 'release', error });
    }
    const lost = lossOf(lock);
    const error = failure ? failedSection(lost, failure.error) : lost?.withSectionResult(value);
    const failed = lost !== undefined || failure !== undefined;
    events.emit('finished', { ...base, durationMs, keptForMs: lost ? 0 : keptForMs, ...(failed ? { error } : {}) });
    if (failed) throw error;
    return { ran: true, value: value as T };
  }

  /**
   * How much longer the run's lock stays taken: until `lockAtLeastFor` after it was taken, and with
   * `perRun` on an interval also until `lockAtLeastFor` after its slot ends, since another instance's
   * timer may fire into the same slot any time before that (intervals of instances start apart).
   */
  private keptFor(takenAt: number, fireTime: number | undefined): number {
    const { lockAtLeastFor } = this.config.options;
    const afterTaking = lockAtLeastFor - (performance.now() - takenAt);
    const slotEnd = fireTime === undefined ? undefined : this.config.schedule?.slotEndOf?.(fireTime);
    const afterSlot = slotEnd === undefined ? 0 : slotEnd + lockAtLeastFor - Date.now();
    return Math.max(0, Math.ceil(Math.max(afterTaking, afterSlot)));
  }
}
