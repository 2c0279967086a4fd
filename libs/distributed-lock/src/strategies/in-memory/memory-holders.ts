import type { LeaseLostListener } from '../../locking/lock-strategy.interface';
import { armMemoryLease, type MemoryLease, type MemoryWaiter } from './memory-queue';

/** One acquisition holding an in-process key (a lock's holder, a semaphore's permit holder). */
export interface MemoryHolder extends MemoryLease {
  readonly owner: string;
  readonly fencingToken: number;
  /** When it was granted (ms since the epoch). */
  readonly grantedAt: number;
  readonly lostListeners: Set<LeaseLostListener>;
}

/** What the table needs of a key's state: who holds it and who waits for it. The rest is the strategy's. */
export interface MemoryKeyState<H extends MemoryHolder> {
  readonly holders: Map<string, H>;
  readonly queue: ReadonlyArray<Pick<MemoryWaiter<unknown, unknown>, 'cancel'>>;
}

/** Where the table hands back to its strategy: who may take the key next is the strategy's rule. */
export interface MemoryHoldersHooks<H extends MemoryHolder, S extends MemoryKeyState<H>> {
  /** Serve the key's queue (and forget the key if idle): called whenever a holder released or lost the key. */
  readonly drain: (key: string, state: S) => void;
  /** Called once per holder taken out of `state.holders`, so the strategy can give back what it held (a weight). */
  readonly onRemoved?: (state: S, holder: H) => void;
}

/** Why a holder lost its lease, as `onLeaseLost` listeners hear it. */
type LostReason = Parameters<LeaseLostListener>[0];

/** How many holders ended unheard are remembered: far more than grants can be on their way at once. */
const ENDED_UNHEARD_KEPT = 1_000;

/**
 * The leases held on in-process keys, shared by the in-memory lock and semaphore: granting with a fencing
 * token, expiry, extension, release and loss are the same whatever a holder holds (a mode, a weight). Who
 * is compatible with whom, and so who leaves the queue, stays with each strategy (`hooks.drain`).
 * `E` is what a holder carries beyond the lease; `S` is the strategy's per-key state.
 */
export class MemoryHolders<E extends object, S extends MemoryKeyState<MemoryHolder & E>> {
  /** The keys someone holds or waits for; each strategy creates and forgets its entries. */
  readonly keys = new Map<string, S>();
  /** Owners ended behind their backs before they listened, and why (see `tell`). */
  private readonly endedUnheard = new Map<string, LostReason>();
  // One counter for all keys: strictly increasing per key, and nothing to keep once a key is idle.
  private lastFencingToken = 0;

  constructor(private readonly hooks: MemoryHoldersHooks<MemoryHolder & E, S>) {}

  /** Makes `request.owner` a holder of `state` with the next fencing token, its lease armed to expire. */
  hold(request: { readonly key: string; readonly owner: string; readonly ttlMs: number }, state: S, details: E): MemoryHolder & E {
    this.lastFencingToken += 1;
    const now = Date.now();
    const holder: MemoryHolder & E = {
      ...details,
      owner: request.owner,
      fencingToken: this.lastFencingToken,
      grantedAt: now,
      expiresAt: now + request.ttlMs,
      timer: undefined,
      lostListeners: new Set<LeaseLostListener>(),
    };
    state.holders.set(request.owner, holder);
    this.armExpiry(request.key, state, holder);
    return holder;
  }

  /** The lease with its new end, or null when the owner no longer holds the key (released, expired, removed). */
  extend<G extends { readonly key: string; readonly owner: string }>(lease: G, ttlMs: number): (G & { expiresAt: number }) | null {
    const state = this.keys.get(lease.key);
    const holder = state?.holders.get(lease.owner);
    if (!state || !holder || holder.expiresAt <= Date.now()) return null;
    holder.expiresAt = Date.now() + ttlMs;
    this.armExpiry(lease.key, state, holder);
    return { ...lease, expiresAt: holder.expiresAt };
  }

  /** Ends the owner's hold and serves the queue; true only if the lease had not expired by then. */
  release(lease: { readonly key: string; readonly owner: string }): boolean {
    const state = this.keys.get(lease.key);
    const holder = state?.holders.get(lease.owner);
    if (!state || !holder) return false;
    const stillValid = holder.expiresAt > Date.now();
    this.remove(state, holder);
    this.hooks.drain(lease.key, state);
    return stillValid;
  }

  /** Registers `listener` for the holder's loss; a lease no longer held never calls it. Returns the unsubscribe. */
  onLeaseLost(lease: { readonly key: string; readonly owner: string }, listener: LeaseLostListener): () => void {
    const holder = this.keys.get(lease.key)?.holders.get(lease.owner);
    if (!holder) {
      // Ended while its grant was on its way to it (a break or an expiry between the grant and this call):
      // told now, as it would have been had it listened.
      const reason = this.endedUnheard.get(lease.owner);
      if (reason) {
        this.endedUnheard.delete(lease.owner);
        queueMicrotask(() => listener(reason));
      }
      return () => undefined;
    }
    holder.lostListeners.add(listener);
    return () => holder.lostListeners.delete(listener);
  }

  /**
   * Takes the key from every holder behind their backs (they are told `reason`: "removed" by default), then
   * serves the queue. Resolves the holders taken; one whose lease had already passed is told "expired" instead.
   */
  forceRelease(key: string, reason: 'removed' | 'broken' = 'removed'): Array<MemoryHolder & E> {
    const state = this.keys.get(key);
    if (!state) return [];
    this.dropExpired(state);
    const removed = [...state.holders.values()];
    for (const holder of removed) {
      this.remove(state, holder);
      this.tell(holder, reason);
    }
    this.hooks.drain(key, state);
    return removed;
  }

  /**
   * Tells a holder taken out behind its back why. One nobody listens to yet (its grant still on its way)
   * is remembered, for `onLeaseLost` to tell when it subscribes; the oldest are forgotten past a bound.
   */
  private tell(holder: MemoryHolder, reason: LostReason): void {
    if (holder.lostListeners.size === 0) {
      if (this.endedUnheard.size >= ENDED_UNHEARD_KEPT) this.endedUnheard.delete(this.endedUnheard.keys().next().value as string);
      this.endedUnheard.set(holder.owner, reason);
      return;
    }
    for (const listener of holder.lostListeners) listener(reason);
  }

  /** Stops every expiry timer and ends every wait (the strategy closes). */
  close(): void {
    for (const state of this.keys.values()) {
      for (const holder of state.holders.values()) clearTimeout(holder.timer);
      for (const waiter of [...state.queue]) waiter.cancel();
    }
  }

  /** Removes the holders whose lease has passed and tells them; callers serve the queue afterwards. */
  dropExpired(state: S): void {
    const now = Date.now();
    for (const holder of [...state.holders.values()]) {
      if (holder.expiresAt > now) continue;
      this.remove(state, holder);
      this.tell(holder, 'expired');
    }
  }

  private armExpiry(key: string, state: S, holder: MemoryHolder & E): void {
    armMemoryLease(
      holder,
      () => state.holders.get(holder.owner) === holder,
      () => {
        this.remove(state, holder);
        this.tell(holder, 'expired');
        this.hooks.drain(key, state);
      },
    );
  }

  private remove(state: S, holder: MemoryHolder & E): void {
    clearTimeout(holder.timer);
    if (state.holders.delete(holder.owner)) this.hooks.onRemoved?.(state, holder);
  }
}
