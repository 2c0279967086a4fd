import type { QueryRunner } from 'typeorm';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import type { WaitBudget } from '../../locking/lock-lease';
import { onBudgetAbort } from '../../locking/wait-for-wake';
import type { LockDataSource } from './database-client.type';
import { cleaningUp, cleanUpStarted } from './pool-clean-up';
import { poolIsFull } from './typeorm-internals';

/**
 * How long before the caller's deadline a wait for a pooled connection ends (at most a tenth of the wait):
 * its error must reach the caller before the lock service's own deadline ends the wait as a plain timeout
 * ("held by another owner"), which would hide the pool.
 */
const POOL_WAIT_EARLY_END_MS = 5;

/** Until when (ms since the epoch) an acquisition with `budget` may wait for a pooled connection; 0 without one. */
export function poolWaitDeadline(budget: WaitBudget | undefined): number {
  return budget ? Date.now() + budget.timeoutMs - Math.min(POOL_WAIT_EARLY_END_MS, budget.timeoutMs / 10) : 0;
}

/** Who asks for the connection, for the error that names the pool. */
export interface PoolConnectionRequest {
  readonly strategy: string;
  readonly key: string;
  /** The pool's size as the strategy read it from the options (see `poolSizeOf`), when known. */
  readonly poolSize: number | undefined;
  /** The strategy's `maxHeldConnections`. */
  readonly maxHeld: number;
}

/**
 * Takes the connection a lock pins (`runner.connect()`) from the pool, within the caller's wait. The
 * drivers' own waits for a pooled connection are unbounded (mysql2) or bounded by an option of their own
 * (pg-pool's `connectionTimeoutMillis`, which fails with an untyped "timeout exceeded when trying to
 * connect"): a pool whose every connection is in use (by held locks, by the application's queries) would
 * hang the acquisition, or end it with the wrong reason.
 *
 * Resolves true once connected; false when the caller gave up (abort) or `onStop` fired (the strategy
 * closes), or when `deadline` (ms since the epoch) passed first with the pool not full (a wait shorter than
 * opening a connection: a timeout like any other). Rejects with `LockBackendUnavailableError` naming the
 * pool when `deadline` passed first with the pool full (at the start or at the end), or when the driver
 * gave up waiting for a connection of a full pool. A connection that
 * comes after the caller left goes straight back to the pool. Without a budget (tryAcquire) the wait is
 * the driver's, bounded by the lock service's operation timeout.
 *
 * A wait that starts with the pool full is behind this process's own users of it, not a silent server:
 * the budget hears so (`serverAnswered`), and the wait is bounded by the caller's deadline alone.
 */
export function connectInTime(
  runner: QueryRunner,
  dataSource: LockDataSource,
  request: PoolConnectionRequest,
  budget: WaitBudget | undefined,
  deadline: number,
  onStop: (stop: () => void) => () => void,
): Promise<boolean> {
  const startedAt = Date.now();
  // Full of the application's queries and held locks, not of our own clean-up (see cleaningUp): a wait
  // that ends against that is a timeout like any other.
  const full = (): boolean => poolIsFull(dataSource) === true && !cleaningUp(dataSource);
  const fullAtStart = full();
  const exhausted = (cause?: unknown): LockBackendUnavailableError => poolExhausted(request, Date.now() - startedAt, cause);
  const connecting = runner.connect();
  if (!budget) {
    return connecting.then(
      () => true,
      (error: unknown) => {
        throw fullAtStart || full() ? exhausted(error) : error;
      },
    );
  }
  if (fullAtStart) budget.serverAnswered?.();
  return new Promise<boolean>((resolve, reject) => {
    let settled = false;
    let connected = false;
    let straggling: (() => void) | undefined;
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      stopWatchingAbort();
      stopWatchingClose();
      // Left before its connection came: that connection, on its way, is ours to give back (clean-up).
      if (!connected) straggling = cleanUpStarted(dataSource);
      return true;
    };
    const leave = (): void => {
      if (settle()) resolve(false);
    };
    // The wait ran out before a connection came: the pool's fault only when it is (or was) full. A wait
    // shorter than opening a connection takes ends as the wait it is (a timeout), not as an exhausted pool.
    // A timer of its own, not a deadline on the strategy's clock: the lock service's own deadline for the
    // same wait is on another clock, and the pool's verdict must be in before it fires (it asks then why the
    // wait was held back). On a loaded machine the clock came second (seen in CI: a timeout instead of
    // "pool exhausted").
    const timer = setTimeout(() => {
      if (!settle()) return;
      if (fullAtStart || full()) reject(exhausted());
      else resolve(false);
    }, Math.max(0, deadline - Date.now()));
    const stopWatchingAbort = onBudgetAbort(budget, leave);
    const stopWatchingClose = onStop(leave);
    connecting.then(
      () => {
        connected = true;
        if (settle()) resolve(true);
        // Too late for the caller: the connection goes back to the pool unused.
        else void runner.release().catch(() => undefined).finally(() => straggling?.());
      },
      (error: unknown) => {
        connected = true;
        straggling?.();
        if (!settle()) return;
        reject(fullAtStart || full() ? exhausted(error) : error);
      },
    );
  });
}

/** The pool had no connection for the lock within the wait: says so, with what to change. */
function poolExhausted(request: PoolConnectionRequest, elapsedMs: number, cause: unknown): LockBackendUnavailableError {
  const pool = request.poolSize === undefined || !Number.isFinite(request.poolSize) ? 'the connection pool' : `the connection pool (${request.poolSize} connections)`;
  return new LockBackendUnavailableError(
    request.strategy,
    'acquire',
    elapsedMs,
    {
      key: request.key,
      cause,
      hint:
        `${pool.charAt(0).toUpperCase()}${pool.slice(1)} is exhausted: every connection stayed in use, by held locks (at most maxHeldConnections = ${request.maxHeld}) and by your application's queries, for the whole wait. ` +
        'Raise the pool size (poolSize), lower maxHeldConnections, or give connections back sooner.',
    },
  );
}
