import type { LeaseGrant, LockMode, LockRequest, WaitBudget } from '../../locking/lock-lease';
import type { LeaseLostListener, LockStrategy, LockStrategyCapabilities } from '../../locking/lock-strategy.interface';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { armMemoryLease, waitInMemoryQueue, type MemoryWaiter } from './memory-queue';
import { InMemorySemaphore } from './in-memory-semaphore';

/** Options of the in-memory strategy. */
export interface InMemoryLockStrategyOptions {
  /** Name used in messages and events. Default "memory". */
  readonly name?: string;
}

interface Holder {
  readonly owner: string;
  readonly mode: LockMode;
  readonly fencingToken: number;
  expiresAt: number;
  timer: NodeJS.Timeout | undefined;
  readonly lostListeners: Set<LeaseLostListener>;
}

type Waiter = MemoryWaiter<LockRequest, LeaseGrant>;

interface KeyState {
  readonly holders: Map<string, Holder>;
  readonly queue: Waiter[];
}

/**
 * Locks inside one process: FIFO queue per key, leases that expire, fencing tokens, shared (read) locks.
 * Not distributed: use it for single-instance apps, local development, and unit tests of code that uses
 * `@Locked` or `LockService`. Writers are not overtaken: once a writer queues, later readers queue too.
 */
export class InMemoryLockStrategy implements LockStrategy {
  readonly name: string;
  readonly capabilities: LockStrategyCapabilities = Object.freeze({
    fencing: true,
    fifo: true,
    sharedLocks: true,
    crossProcess: false,
    semaphores: Object.freeze({ fifo: true, fencing: true }),
  });
  /** Counting semaphores in this process (`LockService.acquirePermit`): FIFO, leased, fenced. */
  readonly semaphore: InMemorySemaphore;
  private readonly keys = new Map<string, KeyState>();
  // One counter for all keys: strictly increasing per key, and nothing to keep once a key is idle.
  private lastFencingToken = 0;
  private closed = false;

  constructor(options: InMemoryLockStrategyOptions = {}) {
    if (options.name !== undefined && (typeof options.name !== 'string' || options.name.length === 0)) {
      throw new InvalidLockOptionsError('name', 'expected a non-empty string.');
    }
    this.name = options.name ?? 'memory';
    this.semaphore = new InMemorySemaphore(this.name, () => this.assertOpen());
  }

  async tryAcquire(request: LockRequest): Promise<LeaseGrant | null> {
    this.assertOpen();
    const state = this.stateOf(request.key);
    if (state.queue.length > 0 || !this.compatible(state, request.mode)) {
      this.forgetIfIdle(request.key, state);
      return null;
    }
    return this.grant(request, state);
  }

  acquire(request: LockRequest, budget: WaitBudget): Promise<LeaseGrant | null> {
    this.assertOpen();
    const state = this.stateOf(request.key);
    if (state.queue.length === 0 && this.compatible(state, request.mode)) return Promise.resolve(this.grant(request, state));
    // The head may have been the one blocking compatible waiters behind it.
    return waitInMemoryQueue(state.queue, request, budget, () => this.drain(request.key, state));
  }

  async extend(lease: LeaseGrant, ttlMs: number): Promise<LeaseGrant | null> {
    const state = this.keys.get(lease.key);
    const holder = state?.holders.get(lease.owner);
    if (!state || !holder || holder.expiresAt <= Date.now()) return null;
    holder.expiresAt = Date.now() + ttlMs;
    this.armExpiry(lease.key, state, holder);
    return { ...lease, expiresAt: holder.expiresAt };
  }

  async release(lease: LeaseGrant): Promise<boolean> {
    const state = this.keys.get(lease.key);
    const holder = state?.holders.get(lease.owner);
    if (!state || !holder) return false;
    const stillValid = holder.expiresAt > Date.now();
    this.removeHolder(state, holder);
    this.drain(lease.key, state);
    return stillValid;
  }

  onLeaseLost(lease: LeaseGrant, listener: LeaseLostListener): () => void {
    const holder = this.keys.get(lease.key)?.holders.get(lease.owner);
    holder?.lostListeners.add(listener);
    return () => holder?.lostListeners.delete(listener);
  }

  async ping(): Promise<void> {
    this.assertOpen();
  }

  /**
   * Delete the key's lock as an operator (or a bug) would, behind the holders' backs: every holder is told
   * its lock was removed, and the next waiter gets it. For tests of lost-lock handling.
   */
  forceRelease(key: string): void {
    const state = this.keys.get(key);
    if (!state) return;
    for (const holder of [...state.holders.values()]) {
      this.removeHolder(state, holder);
      for (const listener of holder.lostListeners) listener('removed');
    }
    this.drain(key, state);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.semaphore.close();
    for (const state of this.keys.values()) {
      for (const holder of state.holders.values()) clearTimeout(holder.timer);
      for (const waiter of [...state.queue]) waiter.cancel();
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new InvalidLockOptionsError('strategy', `in-memory strategy "${this.name}" is closed.`);
  }

  private stateOf(key: string): KeyState {
    let state = this.keys.get(key);
    if (!state) {
      state = { holders: new Map(), queue: [] };
      this.keys.set(key, state);
    }
    this.dropExpired(state);
    return state;
  }

  private compatible(state: KeyState, mode: LockMode): boolean {
    if (state.holders.size === 0) return true;
    if (mode === 'exclusive') return false;
    for (const holder of state.holders.values()) if (holder.mode === 'exclusive') return false;
    return true;
  }

  private grant(request: LockRequest, state: KeyState): LeaseGrant {
    this.lastFencingToken += 1;
    const holder: Holder = {
      owner: request.owner,
      mode: request.mode,
      fencingToken: this.lastFencingToken,
      expiresAt: Date.now() + request.ttlMs,
      timer: undefined,
      lostListeners: new Set(),
    };
    state.holders.set(request.owner, holder);
    this.armExpiry(request.key, state, holder);
    return { key: request.key, owner: request.owner, mode: request.mode, fencingToken: holder.fencingToken, expiresAt: holder.expiresAt };
  }

  private armExpiry(key: string, state: KeyState, holder: Holder): void {
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

  private dropExpired(state: KeyState): void {
    const now = Date.now();
    for (const holder of [...state.holders.values()]) {
      if (holder.expiresAt <= now) {
        this.removeHolder(state, holder);
        for (const listener of holder.lostListeners) listener('expired');
      }
    }
  }

  private removeHolder(state: KeyState, holder: Holder): void {
    clearTimeout(holder.timer);
    state.holders.delete(holder.owner);
  }

  /** Grant waiters from the head of the queue while they fit (several readers at once). */
  private drain(key: string, state: KeyState): void {
    this.dropExpired(state);
    while (state.queue.length > 0 && this.compatible(state, state.queue[0].request.mode)) {
      const waiter = state.queue.shift() as Waiter;
      waiter.grant(this.grant(waiter.request, state));
    }
    this.forgetIfIdle(key, state);
  }

  private forgetIfIdle(key: string, state: KeyState): void {
    if (state.holders.size === 0 && state.queue.length === 0) this.keys.delete(key);
  }
}
