import type { EngineContext } from '../engine-context';
import type { LockRequest } from '../lock-lease';
import type { ResolvedAcquireOptions } from '../lock-options';
import type { LockStrategy } from '../lock-strategy.interface';
import { retryDelay } from '../retry-policy';
import { simpleBoundedCall } from './bounded-call';

/**
 * A polling wait's place in the backend's queue of waiters (`LockStrategy.joinQueue`), for strategies that
 * keep one: taken after the first refused try, so that an uncontended lock never pays for it, and given up
 * when the wait ends. Without `joinQueue`, only the retry policy's pace.
 */
export class QueuePlace {
  private joined = false;

  constructor(
    private readonly ctx: EngineContext,
    private readonly ops: LockStrategy,
    private readonly request: LockRequest,
    private readonly options: ResolvedAcquireOptions,
  ) {}

  /**
   * After a refused try (`attempt` counts them from 0): takes the place at the first, bounded by the
   * operation timeout; resolves the pause before the next try, the strategy's (a waiter at the head of the
   * queue tries again soon) or the retry policy's.
   */
  async refused(attempt: number): Promise<number> {
    const { ops, request, options, ctx } = this;
    if (!ops.joinQueue) return retryDelay(attempt, options.retry);
    if (!this.joined) {
      this.joined = true;
      const join = ops.joinQueue;
      await simpleBoundedCall(ctx.clock, ctx.name, 'acquire', request.key, ctx.operationTimeout, () => join.call(ops, request, options.retry.maxDelay));
      // Taken at once: the lock may have come free meanwhile, and this place may be the oldest.
      return 0;
    }
    return ops.nextTryIn?.(request) ?? retryDelay(attempt, options.retry);
  }

  /**
   * The wait ended: the place goes before the caller hears the outcome, so that a caller whose wait timed
   * out or was aborted finds no trace of it in the queue. Bounded by the operation timeout; never rejects (a
   * place left behind ends with its lease). A granted place is the strategy's to remove, without delaying
   * the grant. Undefined (nothing to wait for) when the wait never took a place.
   */
  leave(): Promise<void> | undefined {
    const { ops, ctx, request } = this;
    if (!this.joined || !ops.leaveQueue) return undefined;
    const leave = ops.leaveQueue;
    return simpleBoundedCall(ctx.clock, ctx.name, 'acquire', request.key, ctx.operationTimeout, () => leave.call(ops, request)).catch(() => undefined);
  }
}
