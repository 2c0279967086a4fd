// Public API. Backend strategies other than in-memory live behind their own entry points
// (e.g. `nest-distributed-lock/strategies/redis`) so that this file never loads a client library.

// Lock engine
export { LockService, type LockServiceOptions } from './locking/lock-service';
export { LockManager, type LockManagerOptions } from './locking/lock-manager';
export { LockHandle, MultiLockHandle, type Lock } from './locking/lock-handle';
export { PermitHandle } from './locking/permit-handle';
export { currentPermit } from './locking/permit-context';
export type { PermitOptions } from './locking/permit-options';
export { currentLock } from './locking/lock-context';
export { assertLocked } from './locking/assert-locked';
export { LockEvents, type LockEventMap, type LockEventBase } from './locking/lock-events';
export { LOCK_DEFAULTS, type AcquireOptions, type LockDefaults, type RetryOptions } from './locking/lock-options';
export type { LockMode, LockRequest, LeaseGrant, PermitRequest, PermitGrant, WaitBudget } from './locking/lock-lease';
export { budgetAborted, onBudgetAbort } from './locking/wait-for-wake';
export type {
  LockStrategy,
  LockStrategyCapabilities,
  LeaseLostListener,
  ReleaseOutcome,
  SemaphoreStrategy,
  SemaphoreCapabilities,
} from './locking/lock-strategy.interface';
export { compileKeyTemplate, toKeyResolver, type LockKeySource, type KeyResolver } from './locking/key-template';
export { validateLockKey } from './locking/lock-key';
export type {
  LockObserver,
  ObservedLockManager,
  ObservedAcquisition,
  AcquisitionObservation,
  AcquisitionOutcome,
  HoldObservation,
} from './locking/lock-observer';

// Traces and metrics (OpenTelemetry; `@opentelemetry/api` is loaded only when an observer is created)
export { OpenTelemetryLockObserver } from './telemetry/open-telemetry-lock-observer';
export { LockObservers } from './telemetry/lock-observers';
export { LOCK_TELEMETRY, LOCK_DURATION_BUCKETS } from './telemetry/lock-telemetry-names';
export type {
  OpenTelemetryLockObserverOptions,
  LockKeyAttribute,
  TelemetryTracerProvider,
  TelemetryMeterProvider,
} from './telemetry/lock-telemetry-options';

// Scheduled jobs, once per cluster
export {
  SCHEDULED_LOCK_DEFAULTS,
  validateScheduledLockOptions,
  type ScheduledLockOptions,
  type ResolvedScheduledLockOptions,
} from './scheduling/scheduled-lock-options';
export { ScheduledJobRunner, type ScheduledJobRunnerOptions, type ScheduledRun } from './scheduling/scheduled-job-runner';
export { ScheduledLockEvents, type ScheduledLockEventMap, type ScheduledRunEventBase } from './scheduling/scheduled-lock-events';
export { cronSchedule, intervalSchedule, fixedSchedule, type FireSchedule } from './scheduling/fire-time';
export { cronFireSchedule, type CronScheduleSource } from './scheduling/cron-fire-schedule';

// Leader election
export { LeaderElection } from './election/leader-election';
export { LEADER_ELECTION_DEFAULTS, type LeaderElectionOptions } from './election/leader-election-options';
export {
  LeaderElectionEvents,
  type LeaderElectionEventMap,
  type LeadershipGainedEvent,
  type LeadershipLostEvent,
} from './election/leader-election-events';

// Optimistic concurrency
export {
  runWithOptimisticRetry,
  OPTIMISTIC_RETRY_DEFAULTS,
  type OptimisticRetryOptions,
} from './versioning/optimistic-retry';

// Errors
export * from './errors';

// In-process strategy
export { InMemoryLockStrategy, type InMemoryLockStrategyOptions } from './strategies/in-memory';

// Nest integration
export { DistributedLockModule } from './nest/distributed-lock.module';
export type {
  DistributedLockModuleOptions,
  DistributedLockFeatureOptions,
  DistributedLockOptionsFactory,
  DistributedLockTelemetryOptions,
} from './nest/distributed-lock-options.interface';
export type { DistributedLockModuleExtras } from './nest/distributed-lock.module-definition';
export type { LogKeys } from './nest/log-keys';
export { getLockServiceToken, getLeaderElectionToken } from './nest/distributed-lock.tokens';
export { Locked, type LockedOptions } from './nest/decorators/locked.decorator';
export { Limited, type LimitedOptions } from './nest/decorators/limited.decorator';
export { OptimisticVersion } from './nest/decorators/optimistic-version.decorator';
export { InjectLockService } from './nest/decorators/inject-lock-service.decorator';
export { LockRegistry } from './nest/lock-registry';
export { ScheduledLock, type ScheduledLockDecoratorOptions } from './nest/decorators/scheduled-lock.decorator';
export { OnLeadershipGained, OnLeadershipLost } from './nest/decorators/leadership-hooks.decorator';
export { InjectLeaderElection } from './nest/decorators/inject-leader-election.decorator';
export { LeaderElections } from './nest/election/leader-elections';
