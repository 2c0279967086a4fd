import { PermitsMismatchError } from '../../errors/permits-mismatch.error';
import type { PermitGrant, PermitRequest, WaitBudget } from '../../locking/lock-lease';
import { permitGrantOf } from '../../locking/permit-grant';
import type { LeaseLostListener, SemaphoreStrategy } from '../../locking/lock-strategy.interface';
import type { SemaphoreInspection } from '../../locking/lock-query';
import { waitInMemoryQueue, type MemoryWaiter } from './memory-queue';
import { MemoryHolders, type MemoryHolder } from './memory-holders';

interface PermitWeight {
  readonly weight: number;
}

type PermitHolder = MemoryHolder & PermitWeight;

type PermitWaiter = MemoryWaiter<PermitRequest, PermitGrant>;

interface SemaphoreState {
  /** The semaphore's size, fixed while anyone holds or waits. */
  readonly permits: number;
  /** The weights held, summed. */
  used: number;
  readonly holders: Map<string, PermitHolder>;
  readonly queue: PermitWaiter[];
}

/**
 * Counting semaphores inside one process, for `InMemoryLockStrategy`: a FIFO queue per semaphore (a
 * waiter is served only when everyone before it was, however many places are free), leases that expire,
 * fencing tokens in the order of the grants. A semaphore's size is forgotten once nobody holds or waits.
 */
export class InMemorySemaphore implements SemaphoreStrategy {
  private readonly holders = new MemoryHolders<PermitWeight, SemaphoreState>({
    drain: (key, state) => this.drain(key, state),
    // A holder's weight is free again however it left (release, expiry, forced removal).
    onRemoved: (state, holder) => {
      state.used -= holder.weight;
    },
  });
  private readonly semaphores = this.holders.keys;

  constructor(
    /** The strategy's name, for errors. */
    private readonly name: string,
    /** Throws when the strategy is closed. */
    private readonly assertOpen: () => void,
  ) {}

  async tryAcquire(request: PermitRequest): Promise<PermitGrant | null> {
    this.assertOpen();
    const state = this.stateOf(request);
    if (state.queue.length > 0 || state.used + request.weight > state.permits) {
      this.forgetIfIdle(request.key, state);
      return null;
    }
    return this.grant(request, state);
  }

  acquire(request: PermitRequest, budget: WaitBudget): Promise<PermitGrant | null> {
    this.assertOpen();
    const state = this.stateOf(request);
    if (state.queue.length === 0 && state.used + request.weight <= state.permits) return Promise.resolve(this.grant(request, state));
    // A heavy waiter at the head may have kept lighter ones behind it waiting.
    return waitInMemoryQueue(state.queue, request, budget, () => this.drain(request.key, state));
  }

  async extend(lease: PermitGrant, ttlMs: number): Promise<PermitGrant | null> {
    return this.holders.extend(lease, ttlMs);
  }

  async release(lease: PermitGrant): Promise<boolean> {
    return this.holders.release(lease);
  }

  onLeaseLost(lease: PermitGrant, listener: LeaseLostListener): () => void {
    return this.holders.onLeaseLost(lease, listener);
  }

  /** The semaphore's size, its live holders and its queue, as they are now (`LockService.queryPermits`). */
  async inspect(key: string): Promise<SemaphoreInspection> {
    this.assertOpen();
    const state = this.semaphores.get(key);
    if (!state) return { holders: [], waiters: [] };
    const now = Date.now();
    return {
      permits: state.permits,
      holders: [...state.holders.values()]
        .filter((holder) => holder.expiresAt > now)
        .map(({ owner, weight, fencingToken, grantedAt, expiresAt }) => ({ owner, weight, fencingToken, grantedAt, expiresAt })),
      waiters: state.queue.map(({ request }) => ({ owner: request.owner, weight: request.weight })),
    };
  }

  /** Takes every permit of `key` from its holders (who are told), as an operator deleting the semaphore would. */
  forceRelease(key: string): void {
    this.holders.forceRelease(key);
  }

  /** Ends every wait and timer (the strategy closes). */
  close(): void {
    this.holders.close();
  }

  /** The semaphore's state, expired holders dropped; throws `PermitsMismatchError` when it is in use with another size. */
  private stateOf(request: PermitRequest): SemaphoreState {
    let state = this.semaphores.get(request.key);
    if (state) {
      this.holders.dropExpired(state);
      this.serve(state);
      if (state.permits !== request.permits) {
        if (state.holders.size > 0 || state.queue.length > 0) {
          throw new PermitsMismatchError(request.key, this.name, request.permits, state.permits);
        }
        state = undefined;
      }
    }
    if (!state) {
      state = { permits: request.permits, used: 0, holders: new Map(), queue: [] };
      this.semaphores.set(request.key, state);
    }
    return state;
  }

  private grant(request: PermitRequest, state: SemaphoreState): PermitGrant {
    const holder = this.holders.hold(request, state, { weight: request.weight });
    state.used += request.weight;
    return permitGrantOf(request, holder.fencingToken, holder.expiresAt);
  }

  /** Grants waiters from the head of the queue while their weight fits; the first that does not fit stops the rest. */
  private drain(key: string, state: SemaphoreState): void {
    this.holders.dropExpired(state);
    this.serve(state);
    this.forgetIfIdle(key, state);
  }

  private serve(state: SemaphoreState): void {
    while (state.queue.length > 0 && state.used + state.queue[0].request.weight <= state.permits) {
      const waiter = state.queue.shift() as PermitWaiter;
      waiter.grant(this.grant(waiter.request, state));
    }
  }

  private forgetIfIdle(key: string, state: SemaphoreState): void {
    if (state.holders.size === 0 && state.queue.length === 0 && this.semaphores.get(key) === state) this.semaphores.delete(key);
  }
}
