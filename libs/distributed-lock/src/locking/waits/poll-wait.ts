import type { EngineContext } from '../engine-context';
import type { LeaseGrant, LockRequest } from '../lock-lease';
import type { ResolvedAcquireOptions } from '../lock-options';
import type { LockStrategy } from '../lock-strategy.interface';
import type { CallerBudget } from '../wait-budget';
import { boundedCall, simpleBoundedCall } from './bounded-call';
import { pause } from './clock-waits';
import { QueuePlace } from './queue-place';
import type { WaitOutcome } from './queue-wait';

/** One `tryAcquire`, bounded by the operation timeout; a grant that comes after the bound is given back. */
export function boundedTry(ctx: EngineContext, ops: LockStrategy, request: LockRequest): Promise<LeaseGrant | null> {
  return simpleBoundedCall(ctx.clock, ctx.name, 'acquire', request.key, ctx.operationTimeout, () => ops.tryAcquire(request), (grant) => void ctx.releaseOrphan(grant, ops));
}

/**
 * A wait by asking again (strategies without a queue of their own, `tryAcquire`, shared locks of a strategy
 * that hands locks on): woken by the strategy's release notification (`waitForRelease`) where it has one,
 * bounded so that a lost notification costs at most `retry.maxDelay`; otherwise paced by the retry policy.
 * The first attempt is a plain bounded call whose answer goes straight to `outcome`: most acquisitions
 * end with it.
 */
export function pollWait<R>(
  ctx: EngineContext,
  ops: LockStrategy,
  request: LockRequest,
  options: ResolvedAcquireOptions,
  budget: CallerBudget,
  deadline: number,
  abortedError: () => Error,
  outcome: WaitOutcome<R>,
): Promise<R> {
  return boundedCall<LeaseGrant | null, R>({
    clock: ctx.clock,
    strategy: ctx.name,
    operation: 'acquire',
    key: request.key,
    timeoutMs: ctx.operationTimeout,
    run: () => ops.tryAcquire(request),
    onLateResult: (grant) => void ctx.releaseOrphan(grant, ops),
    then: (grant) => {
      if (grant ? !options.signal?.aborted : deadline <= Date.now()) return outcome.ended(grant);
      return pollAgain(ctx, ops, request, options, budget, deadline, abortedError, grant).then(
        (later) => outcome.ended(later),
        (error: unknown) => {
          outcome.failed();
          throw error;
        },
      );
    },
    catch: (error) => {
      outcome.failed();
      throw error;
    },
  });
}

async function pollAgain(
  ctx: EngineContext,
  ops: LockStrategy,
  request: LockRequest,
  options: ResolvedAcquireOptions,
  budget: CallerBudget,
  deadline: number,
  abortedError: () => Error,
  firstGrant: LeaseGrant | null,
): Promise<LeaseGrant | null> {
  const { signal } = options;
  const place = new QueuePlace(ctx, ops, request, options);
  let grant = firstGrant;
  try {
    for (let attempt = 0; ; attempt += 1) {
      if (grant) {
        if (!signal?.aborted) return grant;
        // Granted as the caller aborted: not theirs any more, it goes back.
        await ctx.releaseOrphan(grant, ops);
        throw abortedError();
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0 || ctx.closed) return null;
      if (signal?.aborted) throw abortedError();
      if (ops.waitForRelease) {
        // Woken by the backend's notification; the bound caps what a lost notification can cost.
        await waitForRelease(ctx, ops, request.key, Math.min(remaining, options.retry.maxDelay), budget);
      } else {
        await pause(ctx.clock, budget, Math.min(remaining, await place.refused(attempt)));
      }
      if (signal?.aborted) throw abortedError();
      if (ctx.closed) return null;
      grant = await boundedTry(ctx, ops, request);
    }
  } finally {
    const leaving = place.leave();
    if (leaving) await leaving;
  }
}

async function waitForRelease(ctx: EngineContext, ops: LockStrategy, key: string, timeoutMs: number, budget: CallerBudget): Promise<void> {
  const wait = ops.waitForRelease as NonNullable<LockStrategy['waitForRelease']>;
  const stop = new AbortController();
  const signal = AbortSignal.any([budget.signal, stop.signal]);
  try {
    await simpleBoundedCall(ctx.clock, ctx.name, 'wait', key, timeoutMs + ctx.operationTimeout, () => wait.call(ops, key, { signal, timeoutMs }));
  } finally {
    stop.abort();
  }
}
