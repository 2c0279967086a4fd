import { PermitsMismatchError } from '../../errors/permits-mismatch.error';
import type { PermitGrant, PermitRequest, WaitBudget } from '../../locking/lock-lease';
import { permitGrantOf } from '../../locking/permit-grant';
import type { LeaseLostListener, SemaphoreStrategy } from '../../locking/lock-strategy.interface';
import { armMemoryLease, waitInMemoryQueue, type MemoryWaiter } from './memory-queue';

interface PermitHolder {
  readonly owner: string;
  readonly weight: number;
  readonly fencingToken: number;
  expiresAt: number;
  timer: NodeJS.Timeout | undefined;
  readonly lostListeners: Set<LeaseLostListener>;
}

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
  private readonly semaphores = new Map<string, SemaphoreState>();
  private lastFencingToken = 0;

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
    const state = this.semaphores.get(lease.key);
    const holder = state?.holders.get(lease.owner);
    if (!state || !holder || holder.expiresAt <= Date.now()) return null;
    holder.expiresAt = Date.now() + ttlMs;
    this.armExpiry(lease.key, state, holder);
    return { ...lease, expiresAt: holder.expiresAt };
  }

  async release(lease: PermitGrant): Promise<boolean> {
    const state = this.semaphores.get(lease.key);
    const holder = state?.holders.get(lease.owner);
    if (!state || !holder) return false;
    const stillValid = holder.expiresAt > Date.now();
    this.removeHolder(state, holder);
    this.drain(lease.key, state);
    return stillValid;
  }

  onLeaseLost(lease: PermitGrant, listener: LeaseLostListener): () => void {
    const holder = this.semaphores.get(lease.key)?.holders.get(lease.owner);
    holder?.lostListeners.add(listener);
    return () => holder?.lostListeners.delete(listener);
  }

  /** Takes every permit of `key` from its holders (who are told), as an operator deleting the semaphore would. */
  forceRelease(key: string): void {
    const state = this.semaphores.get(key);
    if (!state) return;
    for (const holder of [...state.holders.values()]) {
      this.removeHolder(state, holder);
      for (const listener of holder.lostListeners) listener('removed');
    }
    this.drain(key, state);
  }

  /** Ends every wait and timer (the strategy closes). */
  close(): void {
    for (const state of this.semaphores.values()) {
      for (const holder of state.holders.values()) clearTimeout(holder.timer);
      for (const waiter of [...state.queue]) waiter.cancel();
    }
  }

  /** The semaphore's state, expired holders dropped; throws `PermitsMismatchError` when it is in use with another size. */
  private stateOf(request: PermitRequest): SemaphoreState {
    let state = this.semaphores.get(request.key);
    if (state) {
      this.dropExpired(state);
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
    this.lastFencingToken += 1;
    const holder: PermitHolder = {
      owner: request.owner,
      weight: request.weight,
      fencingToken: this.lastFencingToken,
      expiresAt: Date.now() + request.ttlMs,
      timer: undefined,
      lostListeners: new Set(),
    };
    state.holders.set(request.owner, holder);
    state.used += request.weight;
    this.armExpiry(request.key, state, holder);
    return permitGrantOf(request, holder.fencingToken, holder.expiresAt);
  }

  private armExpiry(key: string, state: SemaphoreState, holder: PermitHolder): void {
    armMemoryLease(
      holder,
      () => state.holders.get(holder.owner) === holder,
      () => {
        this.removeHolder(state, holder);
        for (const listener of holder.lostListeners) listener('expired');
        this.drain(key, state);
      },
    );
  }

  private dropExpired(state: SemaphoreState): void {
    const now = Date.now();
    for (const holder of [...state.holders.values()]) {
      if (holder.expiresAt > now) continue;
      this.removeHolder(state, holder);
      for (const listener of holder.lostListeners) listener('expired');
    }
  }

  private removeHolder(state: SemaphoreState, holder: PermitHolder): void {
    clearTimeout(holder.timer);
    if (state.holders.delete(holder.owner)) state.used -= holder.weight;
  }

  /** Grants waiters from the head of the queue while their weight fits; the first that does not fit stops the rest. */
  private drain(key: string, state: SemaphoreState): void {
    this.dropExpired(state);
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
