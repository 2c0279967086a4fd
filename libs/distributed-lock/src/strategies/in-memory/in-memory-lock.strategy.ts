import type { LeaseGrant, LockMode, LockRequest, WaitBudget } from '../../locking/lock-lease';
import type { KeyListing, LockInspection } from '../../locking/lock-query';
import { pageOfSortedKeys } from '../key-pages';
import type { LeaseLostListener, LockStrategy, LockStrategyCapabilities } from '../../locking/lock-strategy.interface';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { waitInMemoryQueue, type MemoryWaiter } from './memory-queue';
import { MemoryHolders, type MemoryHolder } from './memory-holders';
import { InMemorySemaphore } from './in-memory-semaphore';

/** Options of the in-memory strategy. */
export interface InMemoryLockStrategyOptions {
  /** Name used in messages and events. Default "memory". */
  readonly name?: string;
}

interface HolderMode {
  readonly mode: LockMode;
}

type Holder = MemoryHolder & HolderMode;

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
  private readonly holders = new MemoryHolders<HolderMode, KeyState>({ drain: (key, state) => this.drain(key, state) });
  private readonly keys = this.holders.keys;
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
    return this.holders.extend(lease, ttlMs);
  }

  async release(lease: LeaseGrant): Promise<boolean> {
    return this.holders.release(lease);
  }

  onLeaseLost(lease: LeaseGrant, listener: LeaseLostListener): () => void {
    return this.holders.onLeaseLost(lease, listener);
  }

  /** The key's live holders and its queue, as they are now (`LockService.query`). */
  async inspect(key: string): Promise<LockInspection> {
    this.assertOpen();
    const state = this.keys.get(key);
    if (!state) return { holders: [], waiters: [] };
    const now = Date.now();
    const holders = [...state.holders.values()].filter((holder) => holder.expiresAt > now);
    return {
      holders: holders.map(({ owner, mode, fencingToken, grantedAt, expiresAt }) => ({ owner, mode, fencingToken, grantedAt, expiresAt })),
      waiters: state.queue.map(({ request }) => ({ owner: request.owner, mode: request.mode })),
    };
  }

  /** The keys under `prefix` held (on a live lease) or waited for now, in order, a page at a time. */
  async listKeys(prefix: string, page: { readonly cursor?: string; readonly limit: number }): Promise<KeyListing> {
    this.assertOpen();
    const now = Date.now();
    const busy = [...this.keys].filter(([key, state]) => key.startsWith(prefix) && (state.queue.length > 0 || [...state.holders.values()].some((holder) => holder.expiresAt > now)));
    return pageOfSortedKeys(
      busy.map(([key]) => key),
      page,
    );
  }

  /** Ends every hold of the key, tells each holder at once ("broken"), and serves the queue (`LockService.breakLock`). */
  async breakLock(key: string): Promise<LockInspection['holders']> {
    this.assertOpen();
    return this.holders
      .forceRelease(key, 'broken')
      .map(({ owner, mode, fencingToken, grantedAt, expiresAt }) => ({ owner, mode, fencingToken, grantedAt, expiresAt }));
  }

  async ping(): Promise<void> {
    this.assertOpen();
  }

  /**
   * Delete the key's lock as an operator (or a bug) would, behind the holders' backs: every holder is told
   * its lock was removed, and the next waiter gets it. For tests of lost-lock handling.
   */
  forceRelease(key: string): void {
    this.holders.forceRelease(key);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.semaphore.close();
    this.holders.close();
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
    this.holders.dropExpired(state);
    return state;
  }

  private compatible(state: KeyState, mode: LockMode): boolean {
    if (state.holders.size === 0) return true;
    if (mode === 'exclusive') return false;
    for (const holder of state.holders.values()) if (holder.mode === 'exclusive') return false;
    return true;
  }

  private grant(request: LockRequest, state: KeyState): LeaseGrant {
    const holder = this.holders.hold(request, state, { mode: request.mode });
    return { key: request.key, owner: request.owner, mode: request.mode, fencingToken: holder.fencingToken, expiresAt: holder.expiresAt };
  }

  /** Grant waiters from the head of the queue while they fit (several readers at once). */
  private drain(key: string, state: KeyState): void {
    this.holders.dropExpired(state);
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
