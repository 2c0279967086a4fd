import { DistributedLockError } from '../../errors/distributed-lock.error';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import { underRegisteredName } from '../bounded-operation';
import type { Deadline } from '../deadline-clock';
import type { EngineContext } from '../engine-context';
import type { LeaseGrant, LockRequest } from '../lock-lease';
import type { LockStrategy } from '../lock-strategy.interface';
import type { CallerBudget } from '../wait-budget';

/** What becomes of a wait's outcome before its promise settles (so that it needs no promise of its own). */
export interface WaitOutcome<R> {
  /** The wait ended with `grant`, or null without one: what the caller gets. May throw. */
  ended(grant: LeaseGrant | null): R | Promise<R>;
  /** The wait failed; the caller gets the failure. */
  failed(): void;
}

/**
 * A wait in the strategy's own queue (`LockStrategy.acquire`). The caller's wait ends at its deadline
 * whatever the strategy is still doing (a burst of waiters can keep it busy entering and leaving the queue
 * long past it): a grant that comes later is given back, and the strategy's clean-up goes on in the
 * background (close() waits for it). Resolves the grant, or null at the deadline, after an abort or a
 * close; rejects when the strategy fails, or when the server never answers (`signalsServerAnswer`: after
 * one operation timeout, not after the whole wait).
 *
 * One promise and a few deadlines on the clock: it runs for every acquisition of a queueing strategy.
 */
export function queueWait<R>(ctx: EngineContext, ops: LockStrategy, request: LockRequest, budget: CallerBudget, outcome: WaitOutcome<R>, callerBegan?: number): Promise<R> {
  return new Promise<R>((resolve, reject) => new QueueWait(ctx, ops, request, budget, outcome, resolve, reject, callerBegan).start());
}

class QueueWait<R> {
  /** The caller has its answer. */
  private answered = false;
  /** The caller no longer takes a grant (deadline, abort, close, silence, a hung strategy). */
  private abandoned = false;
  /** The strategy's wait is over, a grant that came too late given back; or it hung past its bound. */
  private done = false;
  /** After an abort or close: the caller hears once the strategy is done, at the latest at this deadline. */
  private answerOnDone = false;
  private readonly started = performance.now();
  private deadline: Deadline | undefined;
  private hang: Deadline | undefined;
  private silence: Deadline | undefined;
  private leaving: Deadline | undefined;
  private stopWatchingAbort: (() => void) | undefined;

  constructor(
    private readonly ctx: EngineContext,
    private readonly ops: LockStrategy,
    private readonly request: LockRequest,
    private readonly budget: CallerBudget,
    private readonly outcome: WaitOutcome<R>,
    private readonly resolve: (result: R | Promise<R>) => void,
    private readonly reject: (error: unknown) => void,
    /**
     * When the caller's wait began (`performance.now()`), if before this strategy wait: the engine asks
     * again after a strategy's wait that ended early, and an answer to the caller's earlier wait counts.
     */
    private readonly callerBegan?: number,
  ) {}

  start(): void {
    const { ctx, ops, budget } = this;
    ctx.background.enter();
    let pending: Promise<LeaseGrant | null>;
    try {
      pending = (ops.acquire as NonNullable<LockStrategy['acquire']>).call(ops, this.request, budget);
    } catch (error) {
      pending = Promise.reject(error);
    }
    // The strategy bounds its own wait; one more operation timeout only catches a backend that hangs.
    this.hang = ctx.clock.after(budget.timeoutMs + ctx.operationTimeout, () => this.hungUp());
    this.deadline = ctx.clock.after(budget.timeoutMs, () => this.deadlinePassed());
    if (ops.signalsServerAnswer && !budget.hasAnswer) {
      // A server that accepted the connection but does not answer fails after one operation timeout.
      this.silence = ctx.clock.bound(ctx.operationTimeout, () => {
        // Slow to answer this wait, but answering others begun after it: a busy server, not a silent one.
        if (budget.hasAnswer || ctx.answers.heardSince(this.started)) return;
        // Said before giving up: giving up ends the wait as well, and the silence must win.
        this.answer(null, this.unavailable('acquire (the server did not answer)'));
        this.giveUp();
      });
      budget.onFirstAnswer(() => this.silence?.cancel());
    }
    this.stopWatchingAbort = budget.onAbort(() => this.givenUp());
    pending.then(
      (grant) => this.strategyAnswered(grant),
      (error: unknown) => this.strategyFailed(error),
    );
  }

  private strategyAnswered(grant: LeaseGrant | null): void {
    if (!this.abandoned) {
      this.finish();
      return this.answer(grant);
    }
    // Given up (deadline, abort, silence, a hang) before the grant came: nobody will use it. The caller of
    // an abort hears once it is given back.
    if (!grant) return this.finish();
    void this.ctx.releaseOrphan(grant, this.ops).then(() => this.finish());
  }

  private strategyFailed(error: unknown): void {
    const abandoned = this.abandoned;
    if (abandoned && !this.done) this.ctx.events.emit('backgroundError', { strategy: this.ctx.name, key: this.request.key, operation: 'acquire', error });
    this.finish();
    if (abandoned) return;
    if (this.budget.callerAborted || this.ctx.closed) this.answer(null);
    else
      this.answer(
        null,
        error instanceof DistributedLockError
          ? underRegisteredName(error, this.ctx.name)
          : new LockBackendUnavailableError(this.ctx.name, 'acquire', Math.round(performance.now() - this.started), { key: this.request.key, cause: error }),
      );
    this.giveUp();
  }

  /** The strategy did not end its wait within its bound: the caller hears so; a grant it gives later goes back. */
  private hungUp(): void {
    this.answer(null, this.budget.callerAborted || this.ctx.closed ? undefined : this.unavailable('acquire'));
    this.giveUp();
    this.finish();
  }

  private deadlinePassed(): void {
    // A wait that has not heard from the server yet (shorter than a round trip, or a silent server) gets its
    // first answer, bounded by the silence watch: a healthy server's answer makes it a timeout, none makes it
    // an unavailable server. An answer to another wait of this manager since this one began says as much:
    // a burst of waits queued on one connection hears late, and the last of them must not wait for their
    // own answers past their deadline (seen: 100 etcd waits of 300 ms ending at 1,032 ms on a loaded machine).
    if (this.ops.signalsServerAnswer && !this.budget.hasAnswer && !this.ctx.answers.heardSince(this.callerBegan ?? this.started)) {
      const timedOut = (): void => {
        this.answer(null);
        this.giveUp();
      };
      this.budget.onFirstAnswer(timedOut);
      this.ctx.answers.onNext(timedOut);
      return;
    }
    // Held back by this process rather than by the lock's holder: the strategy's reason, not a timeout.
    const heldBack = this.budget.heldBackBy();
    this.answer(null, heldBack instanceof DistributedLockError ? underRegisteredName(heldBack, this.ctx.name) : heldBack);
    this.giveUp();
  }

  /**
   * The budget was given up: by the caller's abort or close() (the strategy leaves its queue, a grant that
   * comes meanwhile is given back, and the caller hears once it has, so that an aborted wait never holds the
   * lock after the caller was told; but no later than one operation timeout, even if the strategy is stuck
   * in a call to a server that stopped answering), or here (the answer is given at once).
   */
  private givenUp(): void {
    this.abandoned = true;
    if (this.answered) return;
    if (this.done) return this.answer(null);
    this.answerOnDone = true;
    this.leaving ??= this.ctx.clock.after(this.ctx.operationTimeout, () => this.answer(null));
  }

  private giveUp(): void {
    this.abandoned = true;
    this.budget.giveUp();
  }

  private finish(): void {
    if (this.done) return;
    this.done = true;
    this.hang?.cancel();
    this.ctx.background.exit();
    if (this.answerOnDone) this.answer(null);
  }

  private unavailable(operation: string): LockBackendUnavailableError {
    return new LockBackendUnavailableError(this.ctx.name, operation, Math.round(performance.now() - this.started), { key: this.request.key });
  }

  private answer(grant: LeaseGrant | null, error?: unknown): void {
    if (this.answered) return;
    this.answered = true;
    this.deadline?.cancel();
    this.silence?.cancel();
    this.leaving?.cancel();
    this.stopWatchingAbort?.();
    if (error !== undefined) {
      this.outcome.failed();
      return this.reject(error);
    }
    try {
      this.resolve(this.outcome.ended(grant));
    } catch (thrown) {
      this.reject(thrown);
    }
  }
}
