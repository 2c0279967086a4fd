import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockAcquireAbortedError } from '../errors/lock-acquire-aborted.error';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error';
import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import { CallerBudget } from './wait-budget';
import { runBounded } from './bounded-operation';
import { DEFAULT_HAND_OVER_LIMITS } from './hand-over-limits';
import { HandOverLine, type LineWaiter } from './hand-over-line';
import { HeldLock, type HeldLockDeps } from './held-lock';
import { findHeldInChain } from './lock-context';
import { LockEvents } from './lock-events';
import { LockHandle } from './lock-handle';
import type { LeaseGrant, LockRequest, PermitRequest } from './lock-lease';
import type { HoldObservation, LockObserver } from './lock-observer';
import { observeAcquisition } from './observe-acquisition';
import { assertDuration, LOCK_DEFAULTS, type ResolvedAcquireOptions } from './lock-options';
import type { LockStrategy, ReleaseOutcome } from './lock-strategy.interface';
import { createOwnerId } from './owner-id';
import { PermitHandle } from './permit-handle';
import { permitFields } from './lock-events';
import { permitStrategyView } from './permit-strategy-view';
import { retryDelay } from './retry-policy';
import { abortableDelay } from './abortable-delay';
import { waitForWake } from './wait-for-wake';

/** Options of a lock manager (one per strategy). */
export interface LockManagerOptions {
  /** Bound of one server call (acquire attempt, release, extend), in ms. Default 5 000. */
  readonly operationTimeout?: number;
  /**
   * The strategy's name in errors and events: the name it is registered under in a Nest module (the
   * module sets it). Default: the strategy's own `name`.
   */
  readonly name?: string;
  /** Watches acquisitions and holds for traces and metrics (e.g. `OpenTelemetryLockObserver`). Default none. */
  readonly observer?: LockObserver;
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
  /** Acquisitions waiting now, so that close() can end them. */
  private readonly waiting = new Set<CallerBudget>();
  /** Releases of grants nobody took (late answers), so that close() waits for them. */
  private readonly orphans = new Set<Promise<void>>();
  /** Strategy waits the caller no longer awaits (past its deadline), still leaving the backend's queue. */
  private readonly leaving = new Set<Promise<unknown>>();
  /** Per key, this process's contenders in line, for strategies that hand a lock on (see `LockStrategy.transfer`). */
  private readonly lines = new Map<string, HandOverLine>();
  private readonly operationTimeout: number;
  /** The strategy's semaphore seen as a lock strategy, once a permit was asked for. */
  private permitView: LockStrategy | undefined;
  private readonly observer: LockObserver | undefined;
  /** The observer's view of each held lock, when there is an observer. */
  private readonly observedHolds = new Map<HeldLock, HoldObservation>();
  private closed = false;
  private closing: Promise<void> = Promise.resolve();

  constructor(
    readonly strategy: LockStrategy,
    options: LockManagerOptions = {},
  ) {
    this.operationTimeout = assertDuration(options.operationTimeout ?? LOCK_DEFAULTS.operationTimeout, 'operationTimeout', 1);
    this.name = options.name ?? strategy.name;
    this.observer = options.observer;
    this.observer?.attach(this);
  }

  get strategyName(): string {
    return this.name;
  }

  /** The strategy's name in errors and events (see `LockManagerOptions.name`). */
  readonly name: string;

  /** Number of grants currently held through this manager. */
  get heldCount(): number {
    return this.held.size;
  }

  /** Number of acquisitions waiting now through this manager. */
  get waitingCount(): number {
    return this.waiting.size;
  }

  /** The strategy's own name (its kind), for observers. */
  get backendName(): string {
    return this.strategy.name;
  }

  /**
   * Acquire one key, waiting up to `options.waitTimeout`. Resolves `null` only when `nullOnTimeout` is set
   * and the wait ran out; otherwise a timeout throws `LockAcquireTimeoutError`.
   */
  acquire(key: string, options: ResolvedAcquireOptions, nullOnTimeout: boolean, deadline?: number): Promise<LockHandle | null> {
    // Not an async function: without an observer, the acquisition's own promise is handed back as it is,
    // with no promise wrapped around it (telemetry off costs the one test below).
    let reentered: LockHandle | null;
    try {
      reentered = this.tryReenter(key, options);
    } catch (error) {
      return Promise.reject(error as Error);
    }
    if (reentered) return Promise.resolve(reentered);
    if (!this.observer) return this.acquireNew(key, options, nullOnTimeout, deadline);
    // Asked first, observed second: the observer's work is done while the backend answers.
    const startedAt = performance.now();
    const acquiring = this.acquireNew(key, options, nullOnTimeout, deadline);
    const observation = this.observer.acquisitionStarted(this, { key, mode: options.mode, tryOnly: nullOnTimeout, startedAt });
    return observation ? observeAcquisition(observation, acquiring, startedAt, this.observedHolds) : acquiring;
  }

  /**
   * @internal Runs `fn` (the section of `withLock`) as part of `handle`'s hold for the observer, e.g. under
   * the hold's span; runs it as it is without an observer.
   */
  runObserved<T>(handle: LockHandle, fn: () => T): T {
    const hold = this.observedHolds.get(handle.heldLock);
    return hold?.run ? hold.run(fn) : fn();
  }

  /** An acquisition that is not a re-entry. */
  private async acquireNew(key: string, options: ResolvedAcquireOptions, nullOnTimeout: boolean, deadline?: number): Promise<LockHandle | null> {
    const started = Date.now();
    if (this.closed) throw this.closedError(key, 0);
    if (options.mode === 'shared' && !this.strategy.capabilities.sharedLocks) {
      throw new InvalidLockOptionsError('mode', `strategy "${this.name}" does not support shared (read) locks; use mode "exclusive".`);
    }
    this.strategy.validateKey?.(key);
    const request: LockRequest = { key, owner: createOwnerId(), ttlMs: options.ttl, mode: options.mode };
    const grant = await this.obtain(this.strategy, request, options, nullOnTimeout, started, deadline);
    if (!grant) return null;
    // Granted by the backend rather than handed on here: this process's line (if any) knows its holder.
    const line = this.lineOf(grant);
    if (line && !line.isHolder(grant.owner)) line.takenFromBackend(grant.owner);
    const heldLock = this.hold(this.strategy, grant, options, line ? (lease, outcome) => this.handOver(lease, outcome) : undefined);
    this.emitAcquired(grant, Date.now() - started);
    return new LockHandle(heldLock, false);
  }

  /**
   * Acquire `weight` of the `permits` places of the semaphore `key`, waiting up to `options.waitTimeout`
   * (the strategy must offer semaphores: `capabilities.semaphores`). Never re-entered. Resolves `null`
   * only when `nullOnTimeout` is set and the wait ran out; otherwise a timeout throws `LockAcquireTimeoutError`.
   */
  async acquirePermit(key: string, permits: number, weight: number, options: ResolvedAcquireOptions, nullOnTimeout: boolean): Promise<PermitHandle | null> {
    const started = Date.now();
    const semaphore = this.semaphoreView();
    if (this.closed) throw this.closedError(key, 0);
    semaphore.validateKey?.(key);
    const request: PermitRequest = { key, owner: createOwnerId(), ttlMs: options.ttl, mode: 'shared', permits, weight };
    const grant = await this.obtain(semaphore, request, options, nullOnTimeout, started);
    if (!grant) return null;
    const heldLock = this.hold(semaphore, grant, options, undefined);
    this.emitAcquired(grant, Date.now() - started);
    return new PermitHandle(heldLock);
  }

  /**
   * The strategy's semaphore as a lock strategy (see `permitStrategyView`), made once; throws
   * `InvalidLockOptionsError` when the strategy has no semaphores.
   */
  private semaphoreView(): LockStrategy {
    if (this.permitView) return this.permitView;
    const { semaphore, capabilities } = this.strategy;
    if (!semaphore || !capabilities.semaphores) {
      throw new InvalidLockOptionsError(
        'permits',
        `strategy "${this.name}" has no semaphores (capabilities.semaphores is not set). Use a strategy that has them: ` +
          'in-memory, Redis (RedisLockStrategy), the lock table (RowLockStrategy), ZooKeeper or etcd.',
      );
    }
    this.permitView = permitStrategyView(this.strategy, semaphore);
    return this.permitView;
  }

  /**
   * Waits for a grant from `ops` (the strategy, or its semaphore): the wait, the clean-up of a grant that
   * came too late, close() and the timeout. Resolves `null` only on a timeout with `nullOnTimeout`.
   */
  private async obtain(ops: LockStrategy, request: LockRequest, options: ResolvedAcquireOptions, nullOnTimeout: boolean, started: number, deadline?: number): Promise<LeaseGrant | null> {
    const { key } = request;
    const until = deadline ?? started + options.waitTimeout;
    const budget = new CallerBudget(Math.max(1, until - Date.now()), options.signal);
    this.waiting.add(budget);
    let grant: LeaseGrant | null;
    try {
      grant = await this.waitForGrant(ops, request, options, budget, until, started);
      // The wait goes on, for what is left of it, after a grant whose lease ended before it reached the
      // caller (its process stalled while the lock was handed to it, or the answer came late: it may already
      // be someone else's, and goes back), and after a strategy's wait that ended early without the lock
      // (its place in the queue went with a lease or session that expired while the process was frozen).
      // Only the deadline, the caller or close() end a wait without the lock.
      let current = budget;
      for (let retries = 0; ; retries += 1) {
        if (grant && grant.expiresAt > Date.now()) break;
        if (grant) {
          await this.releaseOrphan(grant, ops);
          grant = null;
        }
        if (until <= Date.now() || this.closed || current.aborted || options.signal?.aborted) break;
        // A strategy that keeps ending its wait at once is asked again at the retry policy's pace.
        if (retries > 0) await abortableDelay(Math.min(retryDelay(retries - 1, options.retry), until - Date.now()), options.signal);
        if (until <= Date.now() || this.closed || options.signal?.aborted) break;
        current = new CallerBudget(Math.max(1, until - Date.now()), options.signal);
        this.waiting.add(current);
        try {
          grant = await this.waitForGrant(ops, { ...request, owner: createOwnerId() }, options, current, until, started);
        } finally {
          this.waiting.delete(current);
        }
      }
    } finally {
      this.waiting.delete(budget);
    }
    const waitedMs = Date.now() - started;
    if (this.closed) {
      // close() ended the wait, or came while the grant was on its way: the caller gets no lock, and
      // whatever the backend granted goes back now rather than at its lease's end.
      if (grant) void this.releaseOrphan(grant, ops);
      throw this.closedError(key, waitedMs);
    }
    if (!grant) {
      this.events.emit('timeout', { strategy: this.name, key, waitedMs });
      if (nullOnTimeout) return null;
      throw new LockAcquireTimeoutError(key, this.name, waitedMs);
    }
    return grant;
  }

  /** Holds a grant of `ops`: its watchdog, its lost signal, and this manager's record of it. */
  private hold(ops: LockStrategy, grant: LeaseGrant, options: ResolvedAcquireOptions, handOver: HeldLockDeps['handOver']): HeldLock {
    const heldLock = new HeldLock(
      {
        strategy: ops,
        name: this.name,
        operationTimeout: this.operationTimeout,
        events: this.events,
        onFinished: (lock) => this.finished(lock),
        handOver,
      },
      grant,
      options.ttl,
      options.autoExtend,
    );
    this.held.add(heldLock);
    return heldLock;
  }

  private emitAcquired(grant: LeaseGrant, waitedMs: number): void {
    // Payloads are built only for listeners: most applications listen to none on the hot path.
    if (this.events.listenerCount('acquired') === 0) return;
    this.events.emit('acquired', {
      strategy: this.name,
      key: grant.key,
      owner: grant.owner,
      mode: grant.mode,
      ...permitFields(grant),
      waitedMs,
      fencingToken: grant.fencingToken,
      reentered: false,
    });
  }

  /**
   * Ends every wait at once (the waiters reject with `LockBackendUnavailableError`, leaving the backend's
   * queue), lets releases already on their way finish, releases every held lock (hold counts ignored),
   * then closes the strategy. Idempotent.
   */
  async close(): Promise<void> {
    if (this.closed) return this.closing;
    this.closed = true;
    this.closing = this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    const failures: unknown[] = [];
    const waiting = [...this.waiting];
    for (const budget of waiting) budget.giveUp();
    // Waiters leave the backend's queue before the strategy closes its connections, so that nobody is
    // handed a lock by a waiter that is gone; bounded, since a server that stopped answering may keep a
    // wait in a call that never returns.
    await this.atMost(this.operationTimeout, Promise.all(waiting.map((budget) => budget.settled)));
    // A lock still held is taken from its holder, who is told (its signal aborts with LockLostError
    // 'closed', withLock rejects): a section still running must not go on as if it held the lock, nor
    // commit half its work where the lock is a transaction (a lost lock is rolled back).
    // Locks kept past their section by `releaseAfter` are left to end in the store (committed now where
    // the lock is a transaction): their holders are done with them, and waiting out the delay would hold
    // the shutdown up.
    await Promise.all([...this.held].map((lock) => lock.endLinger()));
    for (const lock of [...this.held]) if (lock.isHeld) lock.markLost('closed');
    await Promise.all([...this.held].map((lock) => lock.settled()));
    await this.atMost(this.operationTimeout, Promise.all([...this.leaving, ...this.orphans]));
    this.observer?.detach(this);
    try {
      await runBounded({ strategy: this.name, operation: 'close', timeoutMs: this.operationTimeout, run: () => this.strategy.close() });
    } catch (error) {
      failures.push(error);
    }
    if (failures.length > 0) {
      throw new LockBackendUnavailableError(this.name, `close (${failures.length} failure(s))`, 0, { cause: failures[0] });
    }
  }

  /** Waits for `work`, but no longer than `ms`: close() must end however the backend behaves. */
  private async atMost(ms: number, work: Promise<unknown>): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([work.catch(() => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
  }

  private closedError(key: string, waitedMs: number): LockBackendUnavailableError {
    return new LockBackendUnavailableError(this.name, 'acquire (the lock service is closed)', waitedMs, { key });
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
      strategy: this.name,
      key,
      owner: grant.owner,
      mode: grant.mode,
      waitedMs: 0,
      fencingToken: grant.fencingToken,
      reentered: true,
    });
    return new LockHandle(heldLock, true);
  }

  /** The line of `grant`'s key, for strategies that hand locks on (exclusive locks only). */
  private lineOf(grant: LeaseGrant): HandOverLine | undefined {
    if (!this.strategy.transfer || grant.mode !== 'exclusive') return undefined;
    let line = this.lines.get(grant.key);
    if (!line) {
      line = new HandOverLine();
      this.lines.set(grant.key, line);
    }
    return line;
  }

  /** A held lock was released or lost: forgotten here, and its key's line moves on. */
  private finished(lock: HeldLock): void {
    this.held.delete(lock);
    this.holderGone(lock.grant.key, lock.grant.owner);
    const observed = this.observedHolds.get(lock);
    if (observed) {
      this.observedHolds.delete(lock);
      observed.holdEnded(Date.now() - lock.acquiredAt);
    }
  }

  private holderGone(key: string, owner: string): void {
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
  private handOver(lease: LeaseGrant, outcome: ReleaseOutcome): Promise<boolean> | undefined {
    const transfer = this.strategy.transfer;
    if (!transfer || outcome === 'lost' || this.closed) return undefined;
    const line = this.lines.get(lease.key);
    const next = line?.successorOf(lease.owner, this.strategy.handOverLimits ?? DEFAULT_HAND_OVER_LIMITS);
    if (!line || !next) return undefined;
    return runBounded({
      strategy: this.name,
      operation: 'release',
      key: lease.key,
      timeoutMs: this.operationTimeout,
      run: () => transfer.call(this.strategy, lease, next.request),
      // Handed on after the caller gave up: the lock is the next contender's on the backend, unknown to it.
      onLateResult: (grant) => void this.releaseOrphan(grant),
    }).then(async (grant) => {
      if (!grant) return false;
      // The next contender left meanwhile (timed out, aborted): its lock goes back to the backend.
      if (!line.handedTo(lease.owner, next, grant)) await this.releaseOrphan(grant);
      return true;
    });
  }

  /**
   * A wait in this process's line for the key (strategies that hand locks on): the first contender polls
   * the backend while no contender here holds the key; the others wait here, and a release hands the
   * lock to the first of them without its polling.
   */
  private async waitInLine(request: LockRequest, options: ResolvedAcquireOptions, budget: CallerBudget, deadline: number, abortedError: () => Error): Promise<LeaseGrant | null> {
    let line = this.lines.get(request.key);
    if (!line) {
      line = new HandOverLine();
      this.lines.set(request.key, line);
    }
    const state: { delivered?: LeaseGrant; wake?: () => void; kept: boolean } = { kept: false };
    const waiter: LineWaiter = {
      request,
      deliver: (grant) => {
        state.delivered = grant;
        state.wake?.();
      },
      wake: () => state.wake?.(),
    };
    const arm = (woken: () => void): (() => void) => {
      state.wake = woken;
      return () => (state.wake = undefined);
    };
    line.join(waiter);
    try {
      for (let attempt = 0; ; ) {
        if (state.delivered) {
          if (options.signal?.aborted) throw abortedError();
          state.kept = true;
          return state.delivered;
        }
        const remaining = deadline - Date.now();
        if (remaining <= 0 || this.closed) return null;
        if (options.signal?.aborted) throw abortedError();
        if (!line.mayPoll(waiter)) {
          // Behind a contender of this process: told when the lock is handed to us or when it is our turn.
          await waitForWake(budget, deadline, arm);
          continue;
        }
        if (line.takeYield()) {
          // Our process gave the key back at its hand-over limit: others first (see HandOverLine.successorOf).
          await waitForWake(budget, Date.now() + Math.min(deadline - Date.now(), retryDelay(0, options.retry)), arm);
          continue;
        }
        const grant = await this.boundedTryAcquire(request);
        if (grant) {
          if (options.signal?.aborted) {
            await this.releaseOrphan(grant);
            throw abortedError();
          }
          line.takenFromBackend(grant.owner);
          return grant;
        }
        if (state.delivered) continue;
        await waitForWake(budget, Date.now() + Math.min(deadline - Date.now(), retryDelay(attempt, options.retry)), arm);
        attempt += 1;
      }
    } finally {
      line.leave(waiter);
      // Handed the lock as the wait ended without it (timeout, abort, close): it goes back.
      if (state.delivered && !state.kept) void this.releaseOrphan(state.delivered);
      if (line.isEmpty) this.lines.delete(request.key);
    }
  }

  private async waitForGrant(ops: LockStrategy, request: LockRequest, options: ResolvedAcquireOptions, budget: CallerBudget, deadline: number, started: number): Promise<LeaseGrant | null> {
    const { signal } = options;
    const abortedError = (): LockAcquireAbortedError =>
      new LockAcquireAbortedError(request.key, this.name, Date.now() - started, { cause: signal?.reason });
    if (signal?.aborted) throw abortedError();
    const giveUp = (): void => budget.giveUp();
    signal?.addEventListener('abort', giveUp, { once: true });
    try {
      if (ops.acquire && deadline > Date.now()) {
        const grant = await this.queueAcquire(ops, request, budget);
        if (signal?.aborted) {
          // A grant that came as the caller aborted is not theirs any more: it goes back.
          if (grant) await this.releaseOrphan(grant, ops);
          throw abortedError();
        }
        return grant;
      }
      if (ops.transfer && request.mode === 'exclusive' && deadline > Date.now()) {
        return await this.waitInLine(request, options, budget, deadline, abortedError);
      }
      for (let attempt = 0; ; attempt += 1) {
        const grant = await this.boundedTryAcquire(request, ops);
        if (grant && signal?.aborted) {
          await this.releaseOrphan(grant, ops);
          throw abortedError();
        }
        if (grant) return grant;
        const remaining = deadline - Date.now();
        if (remaining <= 0 || this.closed) return null;
        if (signal?.aborted) throw abortedError();
        if (ops.waitForRelease) {
          // Woken by the backend's notification; the bound caps what a lost notification can cost.
          await this.boundedWait(ops, request.key, Math.min(remaining, options.retry.maxDelay), budget);
        } else {
          await waitForWake(budget, Date.now() + Math.min(remaining, retryDelay(attempt, options.retry)), () => undefined);
        }
        if (signal?.aborted) throw abortedError();
        if (this.closed) return null;
      }
    } finally {
      signal?.removeEventListener('abort', giveUp);
      budget.finish();
    }
  }

  private boundedTryAcquire(request: LockRequest, ops: LockStrategy = this.strategy): Promise<LeaseGrant | null> {
    return runBounded({
      strategy: this.name,
      operation: 'acquire',
      key: request.key,
      timeoutMs: this.operationTimeout,
      run: () => ops.tryAcquire(request),
      onLateResult: (grant) => this.releaseOrphan(grant, ops),
    });
  }

  private async boundedWait(ops: LockStrategy, key: string, timeoutMs: number, budget: CallerBudget): Promise<void> {
    const waitForRelease = ops.waitForRelease;
    if (!waitForRelease) return;
    const stop = new AbortController();
    const combined = AbortSignal.any([budget.signal, stop.signal]);
    try {
      await runBounded({
        strategy: this.name,
        operation: 'wait',
        key,
        timeoutMs: timeoutMs + this.operationTimeout,
        run: () => waitForRelease.call(ops, key, { signal: combined, timeoutMs }),
      });
    } finally {
      stop.abort();
    }
  }

  /**
   * The strategy's own queue. The caller's wait ends at its deadline whatever the strategy is still doing
   * (a burst of waiters can keep it busy entering and leaving the queue long past it): a grant that comes
   * later is released, and the strategy's clean-up goes on in the background (close() waits for it).
   */
  private async queueAcquire(ops: LockStrategy, request: LockRequest, budget: CallerBudget): Promise<LeaseGrant | null> {
    const acquire = ops.acquire;
    if (!acquire) return null;
    let abandoned = false;
    const started = Date.now();
    const waiting = runBounded({
      strategy: this.name,
      operation: 'acquire',
      key: request.key,
      // The strategy bounds its own wait; the extra operation timeout only catches a backend that hangs.
      timeoutMs: budget.timeoutMs + this.operationTimeout,
      run: () => acquire.call(ops, request, budget),
      onLateResult: (grant) => this.releaseOrphan(grant, ops),
    }).then(
      async (grant) => {
        // Given up (deadline, abort, silence) before the grant came: nobody will use it.
        if (!abandoned) return grant;
        await this.releaseOrphan(grant, ops);
        return null;
      },
      (error: unknown) => {
        if (!abandoned) throw error;
        this.events.emit('backgroundError', { strategy: this.name, key: request.key, operation: 'acquire', error });
        return null;
      },
    );
    this.leaving.add(waiting);
    const forget = (): void => void this.leaving.delete(waiting);
    waiting.then(forget, forget);
    const giveUp = (): void => {
      abandoned = true;
      budget.giveUp();
    };
    let stopSilenceWatch = (): void => undefined;
    // A server that accepted the connection but does not answer fails after one operation timeout.
    const silence = ops.signalsServerAnswer
      ? new Promise<never>((_, reject) => {
          stopSilenceWatch = budget.watchForSilence(this.operationTimeout, () => {
            // Rejected before giving up: giving up ends the wait as well, and the silence must win.
            reject(new LockBackendUnavailableError(this.name, 'acquire (the server did not answer)', Date.now() - started, { key: request.key }));
            giveUp();
          });
        })
      : undefined;
    let deadlineTimer: NodeJS.Timeout | undefined;
    let stopWatchingGiveUp = (): void => undefined;
    const deadline = new Promise<null>((resolve) => {
      // The caller aborted or close() came: the strategy leaves its queue (a grant that came meanwhile is
      // given back), and the caller hears once it has, so that an aborted wait never holds the lock after
      // the caller was told; but no later than one operation timeout, even if the strategy is stuck in a
      // call to a server that stopped answering (it then leaves in the background).
      stopWatchingGiveUp = budget.onAbort(() => {
        abandoned = true;
        let timer: NodeJS.Timeout | undefined;
        const left = waiting.then(() => undefined, () => undefined);
        void Promise.race([left, new Promise<void>((done) => (timer = setTimeout(done, this.operationTimeout)))]).then(() => {
          clearTimeout(timer);
          resolve(null);
        });
      });
      deadlineTimer = setTimeout(() => {
        // A wait that has not heard from the server yet (shorter than a round trip, or a silent server)
        // gets its first answer, bounded by the silence watch: a healthy server's answer makes it a
        // timeout, none makes it an unavailable server.
        if (ops.signalsServerAnswer && !budget.hasAnswer) {
          budget.onFirstAnswer(() => {
            giveUp();
            resolve(null);
          });
          return;
        }
        giveUp();
        resolve(null);
      }, budget.timeoutMs);
    });
    try {
      return await Promise.race(silence ? [waiting, deadline, silence] : [waiting, deadline]);
    } catch (error) {
      budget.giveUp();
      if (!abandoned && (budget.callerAborted || this.closed)) return null;
      throw error;
    } finally {
      clearTimeout(deadlineTimer);
      stopWatchingGiveUp();
      stopSilenceWatch();
    }
  }

  /** A grant that arrived after the caller gave up: give it back so it does not block others until expiry. */
  private releaseOrphan(grant: LeaseGrant | null, ops: LockStrategy = this.strategy): Promise<void> {
    if (!grant) return Promise.resolve();
    this.holderGone(grant.key, grant.owner);
    const releasing = runBounded({
      strategy: this.name,
      operation: 'release',
      key: grant.key,
      timeoutMs: this.operationTimeout,
      run: () => ops.release(grant),
    })
      .catch((error: unknown) => {
        this.events.emit('backgroundError', { strategy: this.name, key: grant.key, operation: 'release', error });
      })
      .then(() => {
        this.orphans.delete(releasing);
      });
    this.orphans.add(releasing);
    return releasing;
  }
}
