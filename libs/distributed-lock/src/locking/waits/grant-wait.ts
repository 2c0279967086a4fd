import { LockAcquireAbortedError } from '../../errors/lock-acquire-aborted.error';
import type { EngineContext } from '../engine-context';
import type { LeaseGrant, LockRequest } from '../lock-lease';
import type { ResolvedAcquireOptions } from '../lock-options';
import type { LockStrategy } from '../lock-strategy.interface';
import { retryDelay } from '../retry-policy';
import { CallerBudget } from '../wait-budget';
import { pause } from './clock-waits';
import type { ProcessLines } from './line-wait';
import { pollWait } from './poll-wait';
import { queueWait, type WaitOutcome } from './queue-wait';

/** Where waits run, and the budgets of the waits under way (close() gives them up). */
export interface GrantWaitDeps {
  readonly ctx: EngineContext;
  /** This process's lines for the strategy's exclusive locks, when it hands locks on. */
  readonly lines: ProcessLines | undefined;
  readonly waiting: Set<CallerBudget>;
}

/**
 * Waits for a grant from `ops` (the strategy, or its semaphore) until `until` (`Date.now()` ms): in the
 * strategy's queue, in this process's line, or by asking again; and resolves what `deliver` makes of the
 * outcome (the grant, or null when the wait ended without one: at its deadline, or at close()). Rejects when
 * the caller aborts or the backend fails. On the common path (a queue or a first attempt that answers at
 * once) the wait's own promise is the only one: `deliver` runs before it settles.
 *
 * The wait goes on, for what is left of it, after a grant whose lease ended before it reached the caller
 * (its process stalled while the lock was handed to it, or the answer came late: it may already be someone
 * else's, and goes back), and after a strategy's wait that ended early without the lock (its place in the
 * queue went with a lease or session that expired while the process was frozen). Only the deadline, the
 * caller or close() end a wait without the lock.
 */
export function waitForGrant<R>(
  deps: GrantWaitDeps,
  ops: LockStrategy,
  request: LockRequest,
  options: ResolvedAcquireOptions,
  until: number,
  started: number,
  deliver: (grant: LeaseGrant | null) => R,
): Promise<R> {
  return new GrantWait(deps, ops, options, until, started, deliver).once(request);
}

class GrantWait<R> implements WaitOutcome<R> {
  private budget: CallerBudget;
  private viaQueue = false;
  /** In `again`'s loop: a wait's grant comes back to it instead of going to `deliver`. */
  private retrying = false;
  private giveUpOnAbort: (() => void) | undefined;
  private request!: LockRequest;
  /** When the caller's wait began, on `performance.now()`'s clock (what `ServerAnswers` reads). */
  private readonly began: number;

  constructor(
    private readonly deps: GrantWaitDeps,
    private readonly ops: LockStrategy,
    private readonly options: ResolvedAcquireOptions,
    private readonly until: number,
    private readonly started: number,
    private readonly deliver: (grant: LeaseGrant | null) => R,
  ) {
    this.budget = this.newBudget();
    this.began = performance.now() - (Date.now() - started);
  }

  /** One wait for `request`; its outcome goes to `ended` / `failed`. */
  once(request: LockRequest): Promise<R> {
    const { deps, ops, options, budget } = this;
    const { ctx } = deps;
    this.request = request;
    if (options.signal?.aborted) return Promise.reject(this.abortedError());
    this.begin();
    const waits = this.until > Date.now();
    const { lines } = deps;
    const line = waits && lines?.active === true && request.mode === 'exclusive' && ops === lines.strategy ? lines : undefined;
    this.viaQueue = !line && waits && ops.acquire !== undefined;
    if (this.viaQueue) return queueWait(ctx, ops, request, budget, this, this.began);
    const abortedError = (): Error => this.abortedError();
    if (line) {
      return line.wait(request, options, budget, this.until, abortedError).then(
        (grant) => this.ended(grant),
        (error: unknown) => {
          this.failed();
          throw error;
        },
      );
    }
    return pollWait(ctx, ops, request, options, budget, this.until, abortedError, this);
  }

  /** @internal the wait ended (see `WaitOutcome`). */
  ended(grant: LeaseGrant | null): R | Promise<R> {
    this.end();
    // A grant that came from the queue as the caller aborted is not theirs any more: it goes back.
    if (this.viaQueue && this.options.signal?.aborted) {
      return this.deps.ctx.releaseOrphan(grant, this.ops).then(() => {
        throw this.abortedError();
      });
    }
    // Inside `again`, the grant goes back to its loop as it is.
    if (this.retrying) return grant as unknown as R;
    if (grant && grant.expiresAt > Date.now()) return this.deliver(grant);
    return this.again(grant);
  }

  /** @internal */
  failed(): void {
    this.end();
  }

  private async again(grant: LeaseGrant | null): Promise<R> {
    const { ctx } = this.deps;
    const { signal } = this.options;
    for (let retries = 0; ; retries += 1) {
      if (grant) {
        await ctx.releaseOrphan(grant, this.ops);
        grant = null;
      }
      if (this.until <= Date.now() || ctx.closed || this.budget.aborted || signal?.aborted) return this.deliver(null);
      // A strategy that keeps ending its wait at once is asked again at the retry policy's pace.
      if (retries > 0) {
        this.budget = this.newBudget();
        this.begin();
        await pause(ctx.clock, this.budget, Math.min(retryDelay(retries - 1, this.options.retry), this.until - Date.now()));
        this.end();
        if (this.until <= Date.now() || ctx.closed || this.budget.aborted || signal?.aborted) return this.deliver(null);
      }
      this.budget = this.newBudget();
      this.retrying = true;
      grant = (await this.once({ ...this.request, owner: ctx.owners.next() })) as unknown as LeaseGrant | null;
      if (grant && grant.expiresAt > Date.now()) return this.deliver(grant);
    }
  }

  private newBudget(): CallerBudget {
    return new CallerBudget(Math.max(1, this.until - Date.now()), this.options.signal, this.deps.ctx.answers);
  }

  /** The budget counts as a wait under way: close() and the caller's signal give it up. */
  private begin(): void {
    const { budget } = this;
    this.deps.waiting.add(budget);
    const { signal } = this.options;
    if (!signal) return;
    this.giveUpOnAbort = () => budget.giveUp();
    signal.addEventListener('abort', this.giveUpOnAbort, { once: true });
  }

  private end(): void {
    if (this.giveUpOnAbort) this.options.signal?.removeEventListener('abort', this.giveUpOnAbort);
    this.giveUpOnAbort = undefined;
    this.deps.waiting.delete(this.budget);
    this.budget.finish();
  }

  private abortedError(): LockAcquireAbortedError {
    return new LockAcquireAbortedError(this.request.key, this.deps.ctx.name, Date.now() - this.started, { cause: this.options.signal?.reason });
  }
}
