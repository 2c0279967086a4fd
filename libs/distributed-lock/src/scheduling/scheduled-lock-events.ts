import { EventEmitter } from 'node:events';

/** Fields common to every scheduled-lock event. */
export interface ScheduledRunEventBase {
  /** The job's lock name (`Class.method` by default). */
  readonly job: string;
  /** The key the run locked (prefix included): the name, or `name@<fire time>` with `perRun`. */
  readonly key: string;
  /** The strategy's registered name. */
  readonly strategy: string;
  /** With `perRun`: the fire time (ms since epoch) the run belongs to. */
  readonly fireTime: number | undefined;
}

/** Payloads by event name. Durations in ms. */
export interface ScheduledLockEventMap {
  /** The lock was held elsewhere (another instance runs, or ran, this job): this run was skipped, not queued. */
  skipped: [ScheduledRunEventBase];
  /** This instance took the lock and the job started. */
  started: [ScheduledRunEventBase & { readonly fencingToken: number | undefined }];
  /** The job ended (resolved or threw); `error` is set when it threw or its lock was lost. `keptForMs`: how much longer `lockAtLeastFor` keeps the lock. */
  finished: [ScheduledRunEventBase & { readonly durationMs: number; readonly keptForMs: number; readonly error?: unknown }];
}

/** Events of every `@ScheduledLock` job of an application (injectable in Nest as `ScheduledLockEvents`). */
export class ScheduledLockEvents extends EventEmitter<ScheduledLockEventMap> {}
