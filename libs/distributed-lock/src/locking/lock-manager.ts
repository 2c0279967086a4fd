import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockAcquireAbortedError } from '../errors/lock-acquire-aborted.error';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error';
import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import { abortableDelay } from './abortable-delay';
import { CallerBudget } from './caller-budget';
import { runBounded } from './bounded-operation';
import { HeldLock } from './held-lock';
import { findHeldInChain } from './lock-context';
import { LockEvents } from './lock-events';
import { LockHandle } from './lock-handle';
import type { LeaseGrant, LockRequest } from './lock-lease';
import { assertDuration, LOCK_DEFAULTS, type ResolvedAcquireOptions } from './lock-options';
import type { LockStrategy } from './lock-strategy.interface';
import { createOwnerId } from './owner-id';
import { retryDelay } from './retry-policy';

/** Options of a lock manager (one per strategy). */
export interface LockManagerOptions {
  /** Bound of one server call (acquire attempt, release, extend), in ms. Default 5 000. */
  readonly operationTimeout?: number;
}

/**
 * The engine over one strategy: waits, retries, bounds every server call, tracks held locks and their
 * watchdogs, handles reentrancy, and releases everything on close. Keys reach it validated and prefixed;
 * `LockService` is the public face.
 */
export class LockManager {
  /** Lifecycle events of every lock taken through this manager. */
  readonly events = new LockEvents();
  /** Identifies this manager's entries in the async call chain. */
  readonly id = Symbol('LockManager');
  private readonly held = new Set<HeldLock>();
  private readonly operationTimeout: number;
  private closed = false;

  constructor(
    readonly strategy: LockStrategy,
    options: LockManagerOptions = {},
  ) {
    this.operationTimeout = assertDuration(options.operationTimeout ?? LOCK_DEFAULTS.operationTimeout, 'operationTimeout', 1);
  }

  get strategyName(): string {
    return this.strategy.name;
  }

  /** Number of grants currently held through this manager. */
  get heldCount(): number {
    return this.held.size;
  }

  /**
   * Acquire one key, waiting up to `options.waitTimeout`. Resolves `null` only when `nullOnTimeout` is set
   * and the wait ran out; otherwise a timeout throws `LockAcquireTimeoutError`.
   */
  async acquire(key: string, options: ResolvedAcquireOptions, nullOnTimeout: boolean, deadline?: number): Promise<LockHandle | null> {
    const started = Date.now();
    const reentered = this.tryReenter(key, options);
    if (reentered) return reentered;
    if (this.closed) throw new LockBackendUnavailableError(this.strategy.name, 'acquire (the lock service is closed)', 0, { key });
    if (options.mode === 'shared' && !this.strategy.capabilities.sharedLocks) {
      throw new InvalidLockOptionsError('mode', `strategy "${this.strategy.name}" does not support shared (read) locks; use mode "exclusive".`);
    }
    this.strategy.validateKey?.(key);
    const request: LockRequest = { key, owner: createOwnerId(), ttlMs: options.ttl, mode: options.mode };
    const until = deadline ?? started + options.waitTimeout;
    const grant = await this.waitForGrant(request, options, until, started);
    const waitedMs = Date.now() - started;
    if (!grant) {
      this.events.emit('timeout', { strategy: this.strategy.name, key, waitedMs });
      if (nullOnTimeout) return null;
      throw new LockAcquireTimeoutError(key, this.strategy.name, waitedMs);
    }
    const heldLock = new HeldLock(
      { strategy: this.strategy, operationTimeout: this.operationTimeout, events: this.events, onFinished: (lock) => this.held.delete(lock) },
      grant,
      options.ttl,
      options.autoExtend,
    );
    this.held.add(heldLock);
    // Payloads are built only for listeners: most applications listen to none on the hot path.
    if (this.events.listenerCount('acquired') > 0) this.events.emit('acquired', {
      strategy: this.strategy.name,
      key,
      owner: grant.owner,
      mode: grant.mode,
      waitedMs,
      fencingToken: grant.fencingToken,
      reentered: false,
    });
    return new LockHandle(heldLock, false);
  }

  /** Release every held lock (hold counts ignored), then close the strategy. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const failures: unknown[] = [];
    await Promise.all(
      [...this.held].map((lock) =>
        lock.releaseNow().catch((error: unknown) => {
          failures.push(error);
        }),
      ),
    );
    try {
      await runBounded({ strategy: this.strategy.name, operation: 'close', timeoutMs: this.operationTimeout, run: () => this.strategy.close() });
    } catch (error) {
      failures.push(error);
    }
    if (failures.length > 0) {
      throw new LockBackendUnavailableError(this.strategy.name, `close (${failures.length} failure(s))`, 0, { cause: failures[0] });
    }
  }

  private tryReenter(key: string, options: ResolvedAcquireOptions): LockHandle | null {
    if (!options.reentrant) return null;
    const entry = findHeldInChain(this.id, key);
    if (!entry) return null;
    const heldLock = entry.handle.heldLock;
    if (heldLock.grant.mode === 'shared' && options.mode === 'exclusive') {
      throw new InvalidLockOptionsError(
        'mode',
        `"${key}" is held in shared mode by this call chain; taking it exclusively here would wait for itself. ` +
          'Take the exclusive lock from the start, or release the shared one first.',
      );
    }
    heldLock.enter();
    const { grant } = heldLock;
    this.events.emit('acquired', {
      strategy: this.strategy.name,
      key,
      owner: grant.owner,
      mode: grant.mode,
      waitedMs: 0,
      fencingToken: grant.fencingToken,
      reentered: true,
    });
    return new LockHandle(heldLock, true);
  }

  private async waitForGrant(request: LockRequest, options: ResolvedAcquireOptions, deadline: number, started: number): Promise<LeaseGrant | null> {
    const { signal } = options;
    const abortedError = (): LockAcquireAbortedError =>
      new LockAcquireAbortedError(request.key, this.strategy.name, Date.now() - started, { cause: signal?.reason });
    if (signal?.aborted) throw abortedError();

    if (this.strategy.acquire && deadline > Date.now()) {
      const grant = await this.queueAcquire(request, deadline, signal);
      if (!grant && signal?.aborted) throw abortedError();
      return grant;
    }

    for (let attempt = 0; ; attempt += 1) {
      const grant = await this.boundedTryAcquire(request);
      if (grant) return grant;
      const remaining = deadline - Date.now();
      if (remaining <= 0) return null;
      if (signal?.aborted) throw abortedError();
      if (this.strategy.waitForRelease) {
        // Woken by the backend's notification; the bound caps what a lost notification can cost.
        const timeoutMs = Math.min(remaining, options.retry.maxDelay);
        await this.boundedWait(request.key, timeoutMs, signal);
      } else {
        await abortableDelay(Math.min(remaining, retryDelay(attempt, options.retry)), signal);
      }
      if (signal?.aborted) throw abortedError();
    }
  }

  private boundedTryAcquire(request: LockRequest): Promise<LeaseGrant | null> {
    return runBounded({
      strategy: this.strategy.name,
      operation: 'acquire',
      key: request.key,
      timeoutMs: this.operationTimeout,
      run: () => this.strategy.tryAcquire(request),
      onLateResult: (grant) => this.releaseOrphan(grant),
    });
  }

  private async boundedWait(key: string, timeoutMs: number, signal: AbortSignal | undefined): Promise<void> {
    const waitForRelease = this.strategy.waitForRelease;
    if (!waitForRelease) return;
    const stop = new AbortController();
    const combined = signal ? AbortSignal.any([signal, stop.signal]) : stop.signal;
    try {
      await runBounded({
        strategy: this.strategy.name,
        operation: 'wait',
        key,
        timeoutMs: timeoutMs + this.operationTimeout,
        run: () => waitForRelease.call(this.strategy, key, { signal: combined, timeoutMs }),
      });
    } finally {
      stop.abort();
    }
  }

  private async queueAcquire(request: LockRequest, deadline: number, signal: AbortSignal | undefined): Promise<LeaseGrant | null> {
    const acquire = this.strategy.acquire;
    if (!acquire) return null;
    const budget = new CallerBudget(Math.max(1, deadline - Date.now()), signal);
    const giveUp = (): void => budget.giveUp();
    signal?.addEventListener('abort', giveUp, { once: true });
    try {
      return await runBounded({
        strategy: this.strategy.name,
        operation: 'acquire',
        key: request.key,
        // The strategy bounds its own wait; the extra operation timeout only catches a backend that hangs.
        timeoutMs: budget.timeoutMs + this.operationTimeout,
        run: () => acquire.call(this.strategy, request, budget),
        onLateResult: (grant) => this.releaseOrphan(grant),
      });
    } catch (error) {
      budget.giveUp();
      if (signal?.aborted) return null;
      throw error;
    } finally {
      signal?.removeEventListener('abort', giveUp);
    }
  }

  /** A grant that arrived after the caller gave up: give it back so it does not block others until expiry. */
  private releaseOrphan(grant: LeaseGrant | null): void {
    if (!grant) return;
    runBounded({
      strategy: this.strategy.name,
      operation: 'release',
      key: grant.key,
      timeoutMs: this.operationTimeout,
      run: () => this.strategy.release(grant),
    }).catch((error: unknown) => this.events.emit('backgroundError', { strategy: this.strategy.name, key: grant.key, operation: 'release', error }));
  }
}
