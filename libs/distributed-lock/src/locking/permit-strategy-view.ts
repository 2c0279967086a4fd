import type { LeaseGrant, LockRequest, PermitGrant, PermitRequest, WaitBudget } from './lock-lease';
import type { LeaseLostListener, LockStrategy, SemaphoreStrategy } from './lock-strategy.interface';

/**
 * A strategy's semaphore seen as a lock strategy, so that the lock manager waits for, holds, watches and
 * releases permits with the machinery of locks (bounded calls, queues, the watchdog, lost signals, close).
 * Requests and grants that pass through it are permit requests and grants. It never closes anything: the
 * strategy itself does.
 */
export function permitStrategyView(strategy: LockStrategy, semaphore: SemaphoreStrategy): LockStrategy {
  const { acquire, waitForRelease, onLeaseLost, checkLease } = semaphore;
  const capabilities = strategy.capabilities.semaphores;
  return {
    name: strategy.name,
    capabilities: Object.freeze({
      fencing: capabilities?.fencing ?? false,
      fifo: capabilities?.fifo ?? false,
      sharedLocks: false,
      crossProcess: strategy.capabilities.crossProcess,
    }),
    signalsServerAnswer: semaphore.signalsServerAnswer,
    tryAcquire: (request: LockRequest) => semaphore.tryAcquire(request as PermitRequest),
    acquire: acquire ? (request: LockRequest, budget: WaitBudget) => acquire.call(semaphore, request as PermitRequest, budget) : undefined,
    waitForRelease: waitForRelease ? (key: string, budget: WaitBudget) => waitForRelease.call(semaphore, key, budget) : undefined,
    extend: (lease: LeaseGrant, ttlMs: number) => semaphore.extend(lease as PermitGrant, ttlMs),
    release: (lease: LeaseGrant) => semaphore.release(lease as PermitGrant),
    onLeaseLost: onLeaseLost ? (lease: LeaseGrant, listener: LeaseLostListener) => onLeaseLost.call(semaphore, lease as PermitGrant, listener) : undefined,
    checkLease: checkLease ? (lease: LeaseGrant) => checkLease.call(semaphore, lease as PermitGrant) : undefined,
    validateKey: strategy.validateKey ? (key: string) => strategy.validateKey?.(key) : undefined,
    close: () => Promise.resolve(),
  };
}
