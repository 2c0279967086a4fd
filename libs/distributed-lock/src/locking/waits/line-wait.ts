import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import { DEFAULT_HAND_OVER_LIMITS } from '../hand-over-limits';
import { HandOverLine, type LineWaiter } from '../hand-over-line';
import type { EngineContext } from '../engine-context';
import type { LeaseGrant, LockRequest } from '../lock-lease';
import type { ResolvedAcquireOptions } from '../lock-options';
import type { LockStrategy, ReleaseOutcome, TransferOutcome } from '../lock-strategy.interface';
import { retryDelay } from '../retry-policy';
import type { CallerBudget } from '../wait-budget';
import { boundedCall } from './bounded-call';
import { wakeOrDeadline } from './clock-waits';
import { boundedTry } from './poll-wait';
import { QueuePlace } from './queue-place';
import { queueWait, type WaitOutcome } from './queue-wait';

/** A queue wait's outcome as it comes: the line decides what it means. */
const AS_IT_COMES: WaitOutcome<LeaseGrant | null> = { ended: (grant) => grant, failed: () => undefined };

/**
 * This process's contenders for each key, for strategies that hand a lock on (`transfer`): the first
 * contender asks the backend while no contender here holds the key (it polls, or waits in the backend's own
 * queue when the strategy has one); the others wait here, and a release hands the lock to the first of them
 * without its asking, within the strategy's hand-over limits (lock cohorting).
 */
export class ProcessLines {
  private readonly lines = new Map<string, HandOverLine>();

  constructor(
    private readonly ctx: EngineContext,
    /** The strategy whose exclusive locks the lines pass on. */
    readonly strategy: LockStrategy,
  ) {}

  /** True when the strategy hands locks on: exclusive grants then go through a line. */
  get active(): boolean {
    return this.strategy.transfer !== undefined;
  }

  /** A grant of the backend (not a hand-over): its key's line, if any, knows its holder. */
  granted(grant: LeaseGrant): void {
    if (!this.active || grant.mode !== 'exclusive') return;
    const line = this.lineOf(grant.key);
    if (!line.isHolder(grant.owner)) line.takenFromBackend(grant.owner);
  }

  /** `owner` no longer holds `key` here (released, lost, given back): the line moves on. */
  holderGone(key: string, owner: string): void {
    const line = this.lines.get(key);
    if (!line) return;
    line.holderGone(owner);
    if (line.isEmpty) this.lines.delete(key);
  }

  /**
   * Releases `lease` by handing the lock to the next contender of this process, when one waits and the
   * limits allow; undefined when the lock goes back to the backend instead. Resolves whether `lease` still
   * held the lock (handed on or not).
   */
  handOver(lease: LeaseGrant, outcome: ReleaseOutcome): Promise<boolean> | undefined {
    const { transfer } = this.strategy;
    if (!transfer || outcome === 'lost' || this.ctx.closed || lease.mode !== 'exclusive') return undefined;
    const line = this.lines.get(lease.key);
    const next = line?.successorOf(lease.owner, this.strategy.handOverLimits ?? DEFAULT_HAND_OVER_LIMITS);
    if (!line || !next) return undefined;
    const { ctx, strategy } = this;
    // Until the hand-over's answer, whenever it comes, `next` waits for it rather than asking the backend.
    next.handOverPending = true;
    let passing: Promise<TransferOutcome> | undefined;
    // Bounded here as well as by the holder's release: this bound is what hears of a pass answered late.
    const handing = boundedCall<TransferOutcome, boolean>({
      clock: ctx.clock,
      strategy: ctx.name,
      operation: 'release',
      key: lease.key,
      timeoutMs: ctx.operationTimeout,
      run: () => {
        // A strategy that throws rather than rejects still ends the pass (and `next` asks again).
        try {
          passing = transfer.call(strategy, lease, next.request);
        } catch (error) {
          passing = Promise.reject(error);
        }
        return passing;
      },
      // Handed on after the holder's release gave up: still the next contender's, if it waits; else it goes back.
      onLateResult: (grant) => {
        if (grant && grant !== 'released' && !line.lateHandOver(next, grant)) void ctx.releaseOrphan(grant, strategy);
      },
      then: (grant) => {
        if (!grant) return false;
        // The strategy let the lock go to its backend instead (a waiter of another process came first).
        if (grant === 'released') return true;
        // The holder's own bound may have ended a moment before this one (see HeldLock): then as a late pass.
        if (line.handedTo(lease.owner, next, grant) || line.lateHandOver(next, grant)) return true;
        // The next contender left meanwhile (timed out, aborted): its lock goes back to the backend.
        return ctx.releaseOrphan(grant, strategy).then(() => true);
      },
    });
    // After the answer was dealt with above (this reaction runs after boundedCall's own): `next` may ask again.
    const answered = (): void => {
      next.handOverPending = false;
      next.wake();
    };
    passing?.then(answered, answered);
    return handing;
  }

  /**
   * A wait in this process's line for the key: the first contender polls the backend while no contender
   * here holds the key; the others wait here, and a release hands the lock to the first of them.
   */
  async wait(request: LockRequest, options: ResolvedAcquireOptions, budget: CallerBudget, deadline: number, abortedError: () => Error): Promise<LeaseGrant | null> {
    const { ctx, strategy } = this;
    const line = this.lineOf(request.key);
    // `wokenMeanwhile`: a wake that came while nothing listened (the waiter's own try was out, see below).
    const state: { delivered?: LeaseGrant; failure?: unknown; wake?: () => void; wokenMeanwhile: boolean; kept: boolean } = { wokenMeanwhile: false, kept: false };
    const waiter: LineWaiter = {
      request,
      deliver: (grant) => {
        state.delivered = grant;
        state.wake?.();
      },
      fail: (error) => {
        state.failure = error;
        state.wake?.();
      },
      wake: () => {
        if (state.wake) state.wake();
        else state.wokenMeanwhile = true;
      },
      inBackendQueue: false,
      handOverPending: false,
      askingBackend: false,
    };
    const arm = (woken: () => void): (() => void) => {
      state.wake = woken;
      return () => (state.wake = undefined);
    };
    line.join(waiter);
    // The backend's queue, where it keeps one: the contender of this process that polls holds the place,
    // from its first refused try.
    let place: QueuePlace | undefined;
    try {
      for (let attempt = 0; ; ) {
        if (state.delivered) {
          if (options.signal?.aborted) throw abortedError();
          state.kept = true;
          return state.delivered;
        }
        if (state.failure !== undefined) throw state.failure;
        const remaining = deadline - Date.now();
        if (remaining <= 0 || ctx.closed) return null;
        if (options.signal?.aborted) throw abortedError();
        if (!line.mayPoll(waiter)) {
          // Behind a contender of this process: told when the lock is handed to us or when it is our turn.
          await wakeOrDeadline(ctx.clock, budget, deadline, arm);
          continue;
        }
        if (strategy.acquire) {
          // The backend's own queue: behind whoever waits there already, also after our process gave the
          // key back at its hand-over limit.
          line.takeYield();
          return await this.waitInBackendQueue(waiter, line, budget, abortedError);
        }
        if (line.takeYield()) {
          // Our process gave the key back at its hand-over limit: others first (see HandOverLine.successorOf).
          await wakeOrDeadline(ctx.clock, budget, Date.now() + Math.min(remaining, retryDelay(0, options.retry)), arm);
          continue;
        }
        // Not handed the lock while this try is out (see LineWaiter.askingBackend). A try that outlives its
        // bound rejects here, and the waiter leaves the line: no hand-over finds it after that either.
        waiter.askingBackend = true;
        // The try sees the backend as it is now: an earlier wake is answered by it.
        state.wokenMeanwhile = false;
        let grant: LeaseGrant | null;
        try {
          grant = await boundedTry(ctx, strategy, request);
        } finally {
          waiter.askingBackend = false;
        }
        if (grant) {
          if (options.signal?.aborted) {
            await ctx.releaseOrphan(grant, strategy);
            throw abortedError();
          }
          line.takenFromBackend(grant.owner);
          return grant;
        }
        if (state.delivered) continue;
        place ??= new QueuePlace(ctx, strategy, request, options);
        const pause = await place.refused(attempt);
        attempt += 1;
        // Released here while the try was out: the lock went back to the backend (not handed to us, see
        // LineWaiter.askingBackend), maybe after the backend refused the try. It is asked again now, not
        // after a pause next to a free key.
        if (state.wokenMeanwhile) continue;
        await wakeOrDeadline(ctx.clock, budget, Date.now() + Math.min(deadline - Date.now(), pause), arm);
      }
    } finally {
      line.leave(waiter);
      // Handed the lock as the wait ended without it (timeout, abort, close): it goes back.
      if (state.delivered && !state.kept) void ctx.releaseOrphan(state.delivered, strategy);
      if (line.isEmpty) this.lines.delete(request.key);
      const leaving = place?.leave();
      if (leaving) await leaving;
    }
  }

  /**
   * The first contender of the line waits in the strategy's queue (see `queueWait`): no hand-over reaches it
   * there (the backend grants it), and its grant makes it the line's holder.
   */
  private async waitInBackendQueue(waiter: LineWaiter, line: HandOverLine, budget: CallerBudget, abortedError: () => Error): Promise<LeaseGrant | null> {
    const { ctx, strategy } = this;
    waiter.inBackendQueue = true;
    let grant: LeaseGrant | null;
    try {
      grant = await queueWait(ctx, strategy, waiter.request, budget, AS_IT_COMES);
    } catch (error) {
      // A server that does not answer (or is down) fails those behind it too, as their own waits would have
      // within one operation timeout: each would otherwise wait one more timeout in its turn.
      if (error instanceof LockBackendUnavailableError) line.failBehind(waiter, error);
      throw error;
    } finally {
      waiter.inBackendQueue = false;
    }
    if (budget.callerAborted) {
      await ctx.releaseOrphan(grant, strategy);
      throw abortedError();
    }
    if (grant) line.takenFromBackend(grant.owner);
    return grant;
  }

  private lineOf(key: string): HandOverLine {
    let line = this.lines.get(key);
    if (!line) {
      line = new HandOverLine();
      this.lines.set(key, line);
    }
    return line;
  }
}
