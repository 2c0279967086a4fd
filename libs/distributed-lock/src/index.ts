// Public API: what an application uses. Each export here is a promise kept across minor versions, so the
// list is pinned by public-api.spec.ts: adding a symbol is a decision, made there too.
// - Backend strategies other than in-memory live behind their own entry points
//   (e.g. `nest-distributed-lock/strategies/redis`) so that this file never loads a client library.
// - What a strategy or observer author needs (the `LockStrategy` contract's requests and grants, wait
//   budgets, key templates, the hand-over line) is `nest-distributed-lock/strategy-kit`.
// - Everything else (the engine's parts, option validators, the scheduled-job runner) is internal.

// Nest integration: the module and the decorators
export { DistributedLockModule } from './nest/distributed-lock.module';
export type {
  DistributedLockModuleOptions,
  DistributedLockFeatureOptions,
  DistributedLockOptionsFactory,
  DistributedLockTelemetryOptions,
} from './nest/distributed-lock-options.interface';
export type { DistributedLockModuleExtras } from './nest/distributed-lock.module-definition';
export type { LogKeys } from './nest/log-keys';
export type { LockOperationsOptions } from './nest/operations/lock-operations-options';
export type { LockQueryAnswer, LockBreakAnswer, LockInfoAnswer, LockPageAnswer, PermitsQueryAnswer, PermitsInfoAnswer } from './nest/operations/lock-operations-answers';
export { getLockServiceToken, getLeaderElectionToken } from './nest/distributed-lock.tokens';
export { Locked, type LockedOptions } from './nest/decorators/locked.decorator';
export type { LockKeySource } from './locking/key-template';
export { Limited, type LimitedOptions } from './nest/decorators/limited.decorator';
export { OptimisticVersion } from './nest/decorators/optimistic-version.decorator';
export { InjectLockService } from './nest/decorators/inject-lock-service.decorator';
export { LockRegistry } from './nest/lock-registry';

// LockService: locks and permits in code, with or without Nest
export { LockService, type LockServiceOptions } from './locking/lock-service';
export { LockManager, type LockManagerOptions } from './locking/lock-manager';
export type { LockStrategy } from './locking/lock-strategy.interface';
export { LockHandle, MultiLockHandle, type Lock } from './locking/lock-handle';
export type { LockMode } from './locking/lock-lease';
export type { LockInfo, LockHolderInfo, LockWaiterInfo, LockOwnerInfo, LockPage, PermitsInfo, PermitHolderInfo, PermitWaiterInfo } from './locking/lock-query';
export type { PrefixQueryOptions } from './locking/prefix-query-options';
export { LOCK_DEFAULTS, type AcquireOptions, type LockDefaults, type RetryOptions } from './locking/lock-options';
export { currentLock } from './locking/lock-context';
export { assertLocked } from './locking/assert-locked';
export { LockEvents, type LockEventMap, type LockEventBase } from './locking/lock-events';
export { PermitHandle } from './locking/permit-handle';
export { currentPermit } from './locking/permit-context';
export type { PermitOptions } from './locking/permit-options';

// Scheduled jobs, once per cluster
export { ScheduledLock, type ScheduledLockDecoratorOptions } from './nest/decorators/scheduled-lock.decorator';
export { SCHEDULED_LOCK_DEFAULTS, type ScheduledLockOptions } from './scheduling/scheduled-lock-options';
export { ScheduledLockEvents, type ScheduledLockEventMap, type ScheduledRunEventBase } from './scheduling/scheduled-lock-events';

// Leader election
export { LeaderElection } from './election/leader-election';
export type { LeadershipInfo } from './election/leadership-info';
export { LEADER_ELECTION_DEFAULTS, type LeaderElectionOptions } from './election/leader-election-options';
export {
  LeaderElectionEvents,
  type LeaderElectionEventMap,
  type LeadershipGainedEvent,
  type LeadershipLostEvent,
} from './election/leader-election-events';
export { OnLeadershipGained, OnLeadershipLost } from './nest/decorators/leadership-hooks.decorator';
export { InjectLeaderElection } from './nest/decorators/inject-leader-election.decorator';
export { LeaderElections } from './nest/election/leader-elections';

// Optimistic concurrency
export {
  runWithOptimisticRetry,
  OPTIMISTIC_RETRY_DEFAULTS,
  type OptimisticRetryOptions,
} from './versioning/optimistic-retry';

// Traces and metrics (OpenTelemetry; `@opentelemetry/api` is loaded only when an observer is created)
export { OpenTelemetryLockObserver } from './telemetry/open-telemetry-lock-observer';
export { LOCK_TELEMETRY, LOCK_DURATION_BUCKETS } from './telemetry/lock-telemetry-names';
export type {
  OpenTelemetryLockObserverOptions,
  LockKeyAttribute,
  TelemetryTracerProvider,
  TelemetryMeterProvider,
} from './telemetry/lock-telemetry-options';

// Errors
export * from './errors';

// In-process strategy
export { InMemoryLockStrategy, type InMemoryLockStrategyOptions } from './strategies/in-memory';
