/**
 * The strategy kit (`nest-distributed-lock/strategy-kit`): what a library author needs to put a new backend
 * behind `LockService`, `@Locked` and the Nest module, or to watch every lock for traces and metrics. An
 * application that only uses the shipped strategies never imports it.
 *
 * - The contract: `LockStrategy` (and its `SemaphoreStrategy`), what it is asked (`LockRequest`,
 *   `PermitRequest`) and what it answers (`LeaseGrant`, `PermitGrant`).
 * - Waiting: the `WaitBudget` a queueing `acquire` gets, read on hot paths with `budgetAborted` and
 *   `onBudgetAbort`.
 * - The line of contenders of one process: `transfer` with `HandOverLimits` (a strategy's `localHandover`
 *   option is a `LocalHandOverOption`).
 * - Keys: `validateLockKey`, and the key templates of `@Locked` (`compileKeyTemplate`, `toKeyResolver`).
 * - Observers: `LockObserver` and what it is shown, `LockObservers` to give a manager several.
 *
 * How to write one, and the contract suite that decides when it is done: docs/writing-a-strategy.md.
 *
 * @module strategy-kit
 */

// The contract
export type {
  LockStrategy,
  LockStrategyCapabilities,
  LeaseLostListener,
  ReleaseOutcome,
  TransferOutcome,
  SemaphoreStrategy,
  SemaphoreCapabilities,
} from '../locking/lock-strategy.interface';
export type { LockRequest, LeaseGrant, PermitRequest, PermitGrant, WaitBudget } from '../locking/lock-lease';
export type { KeyListing, LockInspection, SemaphoreInspection } from '../locking/lock-query';
export type { ResolvedAcquireOptions } from '../locking/lock-options';

// Waiting
export { budgetAborted, onBudgetAbort } from '../locking/wait-for-wake';

// The line of contenders of one process
export type { HandOverLimits, LocalHandOverOption } from '../locking/hand-over-limits';

// Keys
export { validateLockKey } from '../locking/lock-key';
export { compileKeyTemplate, toKeyResolver, type LockKeySource, type KeyResolver } from '../locking/key-template';

// Observers
export type {
  LockObserver,
  ObservedLockManager,
  ObservedAcquisition,
  AcquisitionObservation,
  AcquisitionOutcome,
  HoldObservation,
} from '../locking/lock-observer';
export { LockObservers } from '../telemetry/lock-observers';
