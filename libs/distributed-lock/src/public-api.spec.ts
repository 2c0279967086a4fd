// The public API, pinned. Every name an entry point exports is a promise kept across minor versions: adding
// one (a type included) must be a decision, made here, and removing one a breaking change. The main entry is
// what an application uses; the strategy kit what an author of a strategy or an observer needs; the rest of
// the library is internal (see index.ts and strategy-kit/index.ts).
import { join } from 'node:path';
import ts from 'typescript';

/** The names each entry point exports, types included, as the compiler sees them. */
function exportsOf(entries: readonly string[]): Record<string, string[]> {
  // Only the library's own files are read (noResolve): export lists need no package's types, and this takes
  // seconds rather than the whole workspace's type check.
  const files = ts.sys.readDirectory(__dirname, ['.ts'], ['**/*.spec.ts']);
  const program = ts.createProgram(files, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    noResolve: true,
    noLib: true,
    types: [],
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  return Object.fromEntries(
    entries.map((entry) => {
      const file = program.getSourceFile(join(__dirname, entry));
      const module = file && checker.getSymbolAtLocation(file);
      if (!module) throw new Error(`${entry} is not a module of the library`);
      return [entry, checker.getExportsOfModule(module).map((symbol) => symbol.name).sort()];
    }),
  );
}

const MAIN = [
    'AcquireOptions', 'DistributedLockError', 'DistributedLockFeatureOptions', 'DistributedLockModule',
    'DistributedLockModuleExtras', 'DistributedLockModuleOptions', 'DistributedLockOptionsFactory',
    'DistributedLockTelemetryOptions', 'FencedWriteRefusedError', 'InMemoryLockStrategy',
    'InMemoryLockStrategyOptions', 'InjectLeaderElection', 'InjectLockService', 'InvalidLockKeyError',
    'InvalidLockOptionsError', 'LEADER_ELECTION_DEFAULTS', 'LOCK_DEFAULTS', 'LOCK_DURATION_BUCKETS',
    'LOCK_TELEMETRY', 'LeaderElection', 'LeaderElectionEventMap', 'LeaderElectionEvents', 'LeaderElectionOptions',
    'LeaderElections', 'LeadershipGainedEvent', 'LeadershipInfo', 'LeadershipLostError', 'LeadershipLostEvent', 'LeadershipLostReason',
    'Limited', 'LimitedOptions', 'Lock', 'LockAcquireAbortedError', 'LockAcquireTimeoutError', 'LockAssertionError',
    'LockBackendUnavailableError', 'LockCommitFailedError', 'LockDefaults', 'LockEventBase', 'LockEventMap',
    'LockBreakAnswer', 'LockEvents', 'LockHandle', 'LockHolderInfo', 'LockInfo', 'LockInfoAnswer', 'LockKeyAttribute', 'LockKeySource', 'LockLostError', 'LockLostReason',
    'LockManager', 'LockManagerOptions', 'LockMode', 'LockNotHeldError', 'LockNotReplicatedError',
    'LockNotReplicatedReason', 'LockOperationsOptions', 'LockOwnerInfo', 'LockPage', 'LockPageAnswer', 'LockPermissionDeniedError', 'LockQueryAnswer', 'LockServiceClosedError', 'LockTableMismatchError', 'LockTableMissingError', 'LockRegistry', 'LockService', 'LockServiceOptions',
    'LockStrategy', 'LockWaiterInfo', 'Locked', 'LockedOptions', 'LogKeys', 'MissingPeerDependencyError', 'MultiLockHandle',
    'OPTIMISTIC_RETRY_DEFAULTS', 'OnLeadershipGained', 'OnLeadershipLost', 'OpenTelemetryLockObserver',
    'OpenTelemetryLockObserverOptions', 'OptimisticRetryOptions', 'OptimisticVersion', 'PermitHandle',
    'PermitHolderInfo', 'PermitOptions', 'PermitWaiterInfo', 'PermitsInfo', 'PrefixQueryOptions', 'PermitsInfoAnswer', 'PermitsMismatchError', 'PermitsQueryAnswer', 'RetryOptions', 'SCHEDULED_LOCK_DEFAULTS', 'ScheduledLock',
    'ScheduledLockDecoratorOptions', 'ScheduledLockEventMap', 'ScheduledLockEvents', 'ScheduledLockOptions',
    'ScheduledRunEventBase', 'StrategyNotRegisteredError', 'TelemetryMeterProvider', 'TelemetryTracerProvider',
    'VersionConflictError', 'assertLocked', 'currentLock', 'currentPermit', 'getLeaderElectionToken',
    'getLockServiceToken', 'runWithOptimisticRetry',
];

const STRATEGY_KIT = [
    'AcquisitionObservation', 'AcquisitionOutcome', 'HandOverLimits', 'HoldObservation', 'KeyResolver', 'LeaseGrant',
    'KeyListing', 'LeaseLostListener', 'LocalHandOverOption', 'LockInspection', 'LockKeySource', 'LockObserver', 'LockObservers', 'LockRequest',
    'LockStrategy', 'LockStrategyCapabilities', 'ObservedAcquisition', 'ObservedLockManager', 'PermitGrant',
    'PermitRequest', 'ReleaseOutcome', 'ResolvedAcquireOptions', 'SemaphoreCapabilities', 'SemaphoreInspection', 'SemaphoreStrategy', 'TransferOutcome',
    'WaitBudget', 'budgetAborted', 'compileKeyTemplate', 'onBudgetAbort', 'toKeyResolver', 'validateLockKey',
];

describe('the public API', () => {
  const exported = exportsOf(['index.ts', 'strategy-kit/index.ts']);

  it('the main entry exports what an application uses, and nothing else', () => {
    expect(exported['index.ts']).toEqual([...MAIN].sort());
  });

  it('the strategy kit exports what a strategy or observer author needs, and nothing else', () => {
    expect(exported['strategy-kit/index.ts']).toEqual([...STRATEGY_KIT].sort());
  });

  it('no engine internal is exported from the main entry', () => {
    for (const internal of ['budgetAborted', 'onBudgetAbort', 'compileKeyTemplate', 'toKeyResolver', 'validateLockKey', 'ScheduledJobRunner', 'LockObservers']) {
      expect(exported['index.ts']).not.toContain(internal);
    }
  });
});
