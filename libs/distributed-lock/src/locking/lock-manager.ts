import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error';
import { LockServiceClosedError } from '../errors/lock-service-closed.error';
import type { HeldLock } from './held-lock';
import { findHeldInChain } from './lock-context';
import { LockEvents, permitFields } from './lock-events';
import { LockHandle } from './lock-handle';
import type { LeaseGrant, LockRequest, PermitRequest } from './lock-lease';
import { LockLedger } from './lock-ledger';
import type { LockObserver } from './lock-observer';
import { assertDuration, LOCK_DEFAULTS, type ResolvedAcquireOptions } from './lock-options';
import type { LockStrategy } from './lock-strategy.interface';
import { observeAcquisition } from './observe-acquisition';
import { OperatorCalls } from './operator-calls';
import { assertInstanceName, OwnerIds } from './owner-id';
import { PermitHandle } from './permit-handle';
import { permitStrategyView } from './permit-strategy-view';
import { waitForGrant, type GrantWaitDeps } from './waits/grant-wait';

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
  /**
   * Names this instance of the app in the owner id of every acquisition (after the host and pid), so that
   * `LockService.query` shows it: the pod name, say, where hosts and pids tell the operator little. 1 to 64
   * letters, digits, dots, dashes or underscores. Default none.
   */
  readonly instanceName?: string;
}

/**
 * The engine over one strategy: waits (in the strategy's queue, in this process's line, or by asking
 * again; `waits/`), bounds every server call on one clock, tracks held locks and their watchdogs (the
 * ledger), handles reentrancy, and releases everything on close. Keys reach it validated and prefixed;
 * `LockService` is the public face.
 */
export class LockManager {
  /** Lifecycle events of every lock taken through this manager. */
  readonly events = new LockEvents();
  /** Identifies this manager's entries in the async call chain. */
  readonly id = Symbol('LockManager');
  /** The strategy's name in errors and events (see `LockManagerOptions.name`). */
  readonly name: string;
  private readonly ledger: LockLedger;
  /** @internal The operator's calls behind `LockService.query`, `queryPrefix`, `queryPermits` and `breakLock`. */
  readonly operator: OperatorCalls;
  private readonly observer: LockObserver | undefined;
  private readonly waits: GrantWaitDeps;
  /** The strategy's semaphore seen as a lock strategy, once a permit was asked for. */
  private permitView: LockStrategy | undefined;

  constructor(
    readonly strategy: LockStrategy,
    options: LockManagerOptions = {},
  ) {
    const operationTimeout = assertDuration(options.operationTimeout ?? LOCK_DEFAULTS.operationTimeout, 'operationTimeout', 1);
    this.name = options.name ?? strategy.name;
    this.observer = options.observer;
    const owners = new OwnerIds(assertInstanceName(options.instanceName));
    this.ledger = new LockLedger(strategy, this.name, operationTimeout, this.events, owners, this.observer, this);
    this.waits = { ctx: this.ledger, lines: this.ledger.lines, waiting: this.ledger.waiting };
    this.operator = new OperatorCalls(strategy, this.name, this.ledger, this.events);
    this.observer?.attach(this);
  }

  get strategyName(): string {
    return this.name;
  }

  /** Number of grants currently held through this manager. */
  get heldCount(): number {
    return this.ledger.held.size;
  }

  /** Number of acquisitions waiting now through this manager. */
  get waitingCount(): number {
    return this.ledger.waiting.size;
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
    // Not an async function: without an observer, the acquisition's own promise is handed back as it is.
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
    return observation ? observeAcquisition(observation, acquiring, startedAt, this.ledger.observedHolds) : acquiring;
  }

  /**
   * @internal Runs `fn` (the section of `withLock`) as part of `handle`'s hold for the observer, e.g. under
   * the hold's span; runs it as it is without an observer.
   */
  runObserved<T>(handle: { readonly heldLock: HeldLock }, fn: () => T): T {
    const hold = this.ledger.observedHolds.get(handle.heldLock);
    return hold?.run ? hold.run(fn) : fn();
  }

  /** An acquisition that is not a re-entry. */
  private acquireNew(key: string, options: ResolvedAcquireOptions, nullOnTimeout: boolean, deadline?: number): Promise<LockHandle | null> {
    const started = Date.now();
    if (this.ledger.closed) return Promise.reject(this.closedError(key, 0));
    if (options.mode === 'shared' && !this.strategy.capabilities.sharedLocks) {
      return Promise.reject(new InvalidLockOptionsError('mode', `strategy "${this.name}" does not support shared (read) locks; use mode "exclusive".`));
    }
    try {
      this.strategy.validateKey?.(key);
    } catch (error) {
      return Promise.reject(error as Error);
    }
    const request: LockRequest = { key, owner: this.ledger.owners.next(), ttlMs: options.ttl, mode: options.mode };
    return waitForGrant(this.waits, this.strategy, request, options, deadline ?? started + options.waitTimeout, started, (granted) => {
      const grant = this.outcome(this.strategy, granted, key, started, nullOnTimeout);
      if (!grant) return null;
      const handle = new LockHandle(this.ledger.hold(this.strategy, grant, options), false);
      this.emitAcquired(grant, Date.now() - started);
      return handle;
    });
  }

  /**
   * Acquire `weight` of the `permits` places of the semaphore `key`, waiting up to `options.waitTimeout`
   * (the strategy must offer semaphores: `capabilities.semaphores`). Never re-entered. Resolves `null`
   * only when `nullOnTimeout` is set and the wait ran out; otherwise a timeout throws `LockAcquireTimeoutError`.
   */
  acquirePermit(key: string, permits: number, weight: number, options: ResolvedAcquireOptions, nullOnTimeout: boolean): Promise<PermitHandle | null> {
    const started = Date.now();
    let semaphore: LockStrategy;
    try {
      semaphore = this.semaphoreView();
      if (this.ledger.closed) throw this.closedError(key, 0);
      semaphore.validateKey?.(key);
    } catch (error) {
      return Promise.reject(error as Error);
    }
    const request: PermitRequest = { key, owner: this.ledger.owners.next(), ttlMs: options.ttl, mode: 'shared', permits, weight };
    const acquiring = waitForGrant(this.waits, semaphore, request, options, started + options.waitTimeout, started, (granted) => {
      const grant = this.outcome(semaphore, granted, key, started, nullOnTimeout);
      if (!grant) return null;
      const permit = new PermitHandle(this.ledger.hold(semaphore, grant, options));
      this.emitAcquired(grant, Date.now() - started);
      return permit;
    });
    if (!this.observer) return acquiring;
    // Observed as a lock is: a span from the call to the release, the wait and hold figures, under "permit".
    const startedAt = performance.now();
    const observation = this.observer.acquisitionStarted(this, { key, mode: 'shared', tryOnly: nullOnTimeout, startedAt, permit: { permits, weight } });
    return observation ? observeAcquisition(observation, acquiring, startedAt, this.ledger.observedHolds) : acquiring;
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
   * What the caller gets for the end of a wait for `ops` (the strategy, or its semaphore): the grant, `null`
   * on a timeout with `nullOnTimeout`, or (thrown) `LockAcquireTimeoutError` or the closed error.
   */
  private outcome(ops: LockStrategy, grant: LeaseGrant | null, key: string, started: number, nullOnTimeout: boolean): LeaseGrant | null {
    const waitedMs = Date.now() - started;
    if (this.ledger.closed) {
      // close() ended the wait, or came while the grant was on its way: the caller gets no lock, and
      // whatever the backend granted goes back now rather than at its lease's end.
      if (grant) void this.ledger.releaseOrphan(grant, ops);
      throw this.closedError(key, waitedMs);
    }
    if (grant) return grant;
    this.events.emit('timeout', { strategy: this.name, key, waitedMs });
    if (nullOnTimeout) return null;
    throw new LockAcquireTimeoutError(key, this.name, waitedMs);
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
   * Ends every wait at once (the waiters reject with `LockServiceClosedError`, leaving the backend's
   * queue), lets releases already on their way finish, releases every held lock (hold counts ignored),
   * then closes the strategy. Idempotent.
   */
  close(): Promise<void> {
    return this.ledger.close();
  }

  private closedError(key: string, waitedMs: number): LockServiceClosedError {
    return new LockServiceClosedError(this.name, 'acquire', waitedMs, { key });
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
    if (this.events.listenerCount('acquired') > 0) {
      const { grant } = heldLock;
      this.events.emit('acquired', { strategy: this.name, key, owner: grant.owner, mode: grant.mode, waitedMs: 0, fencingToken: grant.fencingToken, reentered: true });
    }
    return new LockHandle(heldLock, true);
  }
}
