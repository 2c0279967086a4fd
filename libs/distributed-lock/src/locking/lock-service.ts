import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockCommitFailedError } from '../errors/lock-commit-failed.error';
import { LockLostError } from '../errors/lock-lost.error';
import { currentLock, runWithHeldLocks } from './lock-context';
import type { LockEvents } from './lock-events';
import { LockHandle, MultiLockHandle, type Lock } from './lock-handle';
import { validateLockKey } from './lock-key';
import type { LockManager } from './lock-manager';
import { LOCK_DEFAULTS, resolveAcquireOptions, validateAcquireOptions, type AcquireOptions, type LockDefaults } from './lock-options';
import type { LockStrategyCapabilities, ReleaseOutcome } from './lock-strategy.interface';
import { runWithPermit } from './permit-context';
import type { PermitHandle } from './permit-handle';
import { validatePermitOptions, type PermitOptions } from './permit-options';

/** How a lock service names its keys and which defaults it applies. */
export interface LockServiceOptions {
  /** Prepended to every key, e.g. "inventory:". Default "". */
  readonly keyPrefix?: string;
  /** Defaults for every acquisition through this service; per-call options win. */
  readonly defaults?: LockDefaults;
}

/**
 * Take, hold and release locks on one strategy. In Nest, inject it (`LockService` for the module's
 * strategy, `@InjectLockService('name')` for a named one); without Nest, build it over a `LockManager`.
 */
export class LockService {
  private readonly keyPrefix: string;
  private readonly defaults: LockDefaults;

  constructor(
    private readonly manager: LockManager,
    options: LockServiceOptions = {},
  ) {
    this.keyPrefix = validateLockKey(options.keyPrefix ?? '', 'keyPrefix', true);
    this.defaults = validateAcquireOptions(options.defaults, 'defaults');
  }

  /** Name of the strategy behind this service: in a Nest module, the name it was registered under. */
  get strategyName(): string {
    return this.manager.strategyName;
  }

  /** The strategy's own name: its kind ("redis", "database", …) unless its `name` option says otherwise. */
  get backendName(): string {
    return this.manager.strategy.name;
  }

  /** What the strategy guarantees (fencing, FIFO, shared locks, cross-process). */
  get capabilities(): LockStrategyCapabilities {
    return this.manager.strategy.capabilities;
  }

  /** Lifecycle events (acquired, released, extended, lost, timeout, backgroundError). */
  get events(): LockEvents {
    return this.manager.events;
  }

  /** The prefix this service puts before keys. */
  get prefix(): string {
    return this.keyPrefix;
  }

  /** A service on the same strategy whose keys get `keyPrefix` after this service's own prefix. */
  withOptions(options: LockServiceOptions): LockService {
    return new LockService(this.manager, {
      keyPrefix: this.keyPrefix + (options.keyPrefix ?? ''),
      defaults: { ...this.defaults, ...validateAcquireOptions(options.defaults, 'defaults') },
    });
  }

  /**
   * Acquire, waiting up to `waitTimeout` (default 10 s). Throws `LockAcquireTimeoutError` when the wait
   * runs out and `LockAcquireAbortedError` when `signal` aborts. Several keys are taken in sorted order.
   */
  acquire(key: string, options?: AcquireOptions): Promise<LockHandle>;
  acquire(keys: readonly string[], options?: AcquireOptions): Promise<MultiLockHandle>;
  acquire(keyOrKeys: string | readonly string[], options?: AcquireOptions): Promise<Lock> {
    try {
      if (typeof keyOrKeys !== 'string') return this.takeOrThrow(keyOrKeys, options);
      // One key (the common case): no sorting, de-duplication or multi-key handle to build, and no promise
      // but the acquisition's own (it never resolves null when a timeout throws).
      return this.manager.acquire(this.fullKey(keyOrKeys), resolveAcquireOptions(validateAcquireOptions(options), this.defaults), false) as Promise<LockHandle>;
    } catch (error) {
      return Promise.reject(error as Error);
    }
  }

  /** The caller's key with this service's prefix, checked once: nothing below checks it again. */
  private fullKey(key: unknown): string {
    // The prefix was checked when the service was made: only the key and the total length are left.
    const full = this.keyPrefix + validateLockKey(key);
    return full.length > LOCK_DEFAULTS.maxKeyLength ? validateLockKey(full) : full;
  }

  /** Take the lock only if it is free right now (no waiting). Resolves `null` when it is held. */
  tryAcquire(key: string, options?: Omit<AcquireOptions, 'waitTimeout'>): Promise<LockHandle | null>;
  tryAcquire(keys: readonly string[], options?: Omit<AcquireOptions, 'waitTimeout'>): Promise<MultiLockHandle | null>;
  tryAcquire(keyOrKeys: string | readonly string[], options?: Omit<AcquireOptions, 'waitTimeout'>): Promise<Lock | null> {
    try {
      const checked = validateAcquireOptions(options);
      if ('waitTimeout' in checked) throw new InvalidLockOptionsError('waitTimeout', 'tryAcquire never waits; use acquire() with waitTimeout.');
      const once = { ...checked, waitTimeout: 0 };
      if (typeof keyOrKeys === 'string') return this.manager.acquire(this.fullKey(keyOrKeys), resolveAcquireOptions(once, this.defaults), true);
      return this.take(keyOrKeys, once, true);
    } catch (error) {
      return Promise.reject(error as Error);
    }
  }

  /**
   * Run `fn` while holding the lock, and release it afterwards, on success and on failure. Nested calls on
   * the same key inside `fn` re-enter. If the lock was lost while `fn` ran (noticed during the section, or
   * only by the release, which found it no longer held), the `LockLostError` is thrown instead of `fn`'s
   * result, since its work may have overlapped with another holder; the result is on the error's
   * `sectionResult`, for sections whose writes were fenced. Where the release
   * commits the section's writes (`PessimisticLockStrategy`), a failed commit throws `LockCommitFailedError`.
   */
  withLock<T>(key: string | readonly string[], fn: (lock: Lock) => T | Promise<T>, options?: AcquireOptions): Promise<T> {
    if (typeof fn !== 'function') return Promise.reject(new InvalidLockOptionsError('fn', 'withLock needs a function to run under the lock.'));
    // Read once the acquisition validated the options: the section runs in a frame of the call chain only
    // when it can be re-entered (see `runSection`).
    const framed = (): boolean => options?.reentrant ?? this.defaults.reentrant ?? LOCK_DEFAULTS.reentrant;
    // One key (the common case): its handle is the lock, with no multi-key handle around it.
    if (typeof key === 'string') return this.acquire(key, options).then((lock) => this.runSection(lock as LockHandle, [lock as LockHandle], fn, framed()));
    return this.takeOrThrow(key, options).then((lock) => this.runSection(lock, lock.locks, fn, framed()));
  }

  /**
   * Runs a section under `lock` (taken through this service) and releases it after, on success and on
   * failure; the loss of the lock, noticed during the section or by the release, is what the caller gets.
   * Plain promise steps, no async frames: it runs for every `withLock` and `@Locked` call.
   *
   * `framed`: the section runs in a frame of the async call chain (`AsyncLocalStorage`), where nested
   * acquisitions re-enter and `currentLock()` finds the lock. Without re-entry (`reentrant: false`) there is
   * no frame: on Node 20 and 22 the first frame turns on an async hook that every promise of the process
   * pays for afterwards (docs/configuration.md, "The cost of the call-chain frame").
   */
  private runSection<T>(lock: LockHandle | MultiLockHandle, handles: readonly LockHandle[], fn: (lock: Lock) => T | Promise<T>, framed: boolean): Promise<T> {
    const given = handles.length === 1 ? handles[0] : lock;
    const section = framed
      ? (): T | Promise<T> =>
          runWithHeldLocks(
            handles.map((handle) => ({ managerId: this.manager.id, handle, unprefixedKey: handle.key.slice(this.keyPrefix.length) })),
            () => fn(given),
          )
      : (): T | Promise<T> => fn(given);
    let result: T | Promise<T>;
    try {
      // Under the observer's view of the hold (the hold's span, say), for what the section itself traces.
      result = this.manager.runObserved(handles[handles.length - 1], section);
    } catch (error) {
      return this.sectionFailed(lock, error);
    }
    if (!isThenable(result)) return this.sectionDone(lock, result);
    return Promise.resolve(result).then(
      (value) => this.sectionDone(lock, value),
      (error: unknown) => this.sectionFailed(lock, error),
    );
  }

  /** The section returned: release, and the result, unless the lock was lost meanwhile. */
  private sectionDone<T>(lock: LockHandle | MultiLockHandle, result: T): Promise<T> {
    const lostDuring = lossOf(lock);
    return this.releaseQuietly(lock, lostDuring === undefined ? 'completed' : 'lost', () => {
      const lost = lostDuring ?? lossOf(lock);
      if (lost !== undefined) throw lost instanceof LockLostError ? lost.withSectionResult(result) : lost;
      return result;
    });
  }

  /**
   * The section threw. A section that failed after its lock was lost most likely failed because of it (its
   * transaction rolled back, its connection gone): the caller hears of the loss, with the failure as cause.
   */
  private sectionFailed(lock: LockHandle | MultiLockHandle, error: unknown): Promise<never> {
    const lostBefore = lossOf(lock);
    return this.releaseQuietly(lock, 'failed', () => {
      if (lostBefore instanceof LockLostError) throw new LockLostError(lostBefore.key, lostBefore.strategy, lostBefore.reason, { cause: error });
      throw error;
    });
  }

  /**
   * Acquire a permit of the counting semaphore `key`: `weight` (default 1) of its `permits` places, waiting
   * up to `waitTimeout` (default 10 s) in the semaphore's queue (FIFO where the strategy's semaphores are).
   * The permit has its own lease, kept alive by the watchdog unless `ttl` is given (as a lock's), and its
   * `signal` aborts when it is lost. Throws `LockAcquireTimeoutError`, `LockAcquireAbortedError`,
   * `InvalidLockOptionsError` (bad options, or a strategy without semaphores; before any server is touched),
   * and `PermitsMismatchError` when the semaphore is in use with another `permits`. Never re-entered.
   *
   * @example
   * const permit = await locks.acquirePermit('payments', { permits: 5 });
   * try { await charge(order, permit.fencingToken); } finally { await permit.release(); }
   */
  async acquirePermit(key: string, options: PermitOptions): Promise<PermitHandle> {
    const permit = await this.takePermit(key, options, false);
    if (!permit) throw noLockGranted();
    return permit;
  }

  /** Take a permit only if its places are free right now (no waiting). Resolves `null` when they are not. */
  async tryAcquirePermit(key: string, options: Omit<PermitOptions, 'waitTimeout'>): Promise<PermitHandle | null> {
    if (typeof options === 'object' && options !== null && 'waitTimeout' in options) {
      throw new InvalidLockOptionsError('waitTimeout', 'tryAcquirePermit never waits; use acquirePermit() with waitTimeout.');
    }
    return this.takePermit(key, { ...options, waitTimeout: 0 }, true);
  }

  /**
   * Run `fn` while holding a permit of the semaphore `key` (see `acquirePermit`), and give it back
   * afterwards, on success and on failure. If the permit was lost while `fn` ran (noticed during the
   * section, or only by the release), the `LockLostError` is thrown instead of `fn`'s result (which is on
   * its `sectionResult`): more than `permits` callers may have been inside. Inside `fn`, `currentPermit()` returns the permit.
   */
  async withPermit<T>(key: string, fn: (permit: PermitHandle) => T | Promise<T>, options: PermitOptions): Promise<T> {
    if (typeof fn !== 'function') throw new InvalidLockOptionsError('fn', 'withPermit needs a function to run under the permit.');
    const permit = await this.acquirePermit(key, options);
    let result: T;
    try {
      // Under the observer's view of the hold, as a lock's section is.
      result = await this.manager.runObserved(permit, () => runWithPermit(permit, key, () => fn(permit)));
    } catch (error) {
      const lostBefore = permit.signal.aborted ? lossOfPermit(permit) : undefined;
      await this.releaseQuietly(new MultiLockHandle([permit]), 'failed');
      if (lostBefore instanceof LockLostError) throw new LockLostError(lostBefore.key, lostBefore.strategy, lostBefore.reason, { cause: error });
      throw error;
    }
    await this.releaseQuietly(new MultiLockHandle([permit]), permit.signal.aborted ? 'lost' : 'completed');
    const lost = lossOfPermit(permit);
    if (lost !== undefined) throw lost.withSectionResult(result);
    return result;
  }

  private async takePermit(key: string, options: PermitOptions, nullOnTimeout: boolean): Promise<PermitHandle | null> {
    const fullKey = validateLockKey(this.keyPrefix + validateLockKey(key, 'Semaphore key'), 'Semaphore key');
    const checked = validatePermitOptions(options);
    const resolved = resolveAcquireOptions(checked.acquire, this.defaults);
    // A permit is one of several holds and is never re-entered, whatever the service's defaults say.
    return this.manager.acquirePermit(fullKey, checked.permits, checked.weight, { ...resolved, mode: 'shared', reentrant: false }, nullOnTimeout);
  }

  /**
   * @internal Runs `fn` with `lock` (taken through this service) as a lock of the running call chain:
   * `currentLock()` finds it and nested acquisitions of its key re-enter. Releases nothing.
   */
  runAsHolder<T>(lock: LockHandle, fn: () => T): T {
    // Under the observer's view of the hold (its span), as a section of `withLock` is: a scheduled job's work
    // nests under its lock's span.
    return this.manager.runObserved(lock, () => runWithHeldLocks([{ managerId: this.manager.id, handle: lock, unprefixedKey: lock.key.slice(this.keyPrefix.length) }], fn));
  }

  /** The lock on `key` (or the innermost one) held by the running call chain through this strategy. */
  currentLock(key?: string): LockHandle | undefined {
    const handle = currentLock(key === undefined ? undefined : this.keyPrefix + key);
    return handle;
  }

  private async takeOrThrow(keyOrKeys: string | readonly string[], options: AcquireOptions | undefined): Promise<MultiLockHandle> {
    const lock = await this.take(keyOrKeys, options, false);
    if (!lock) throw noLockGranted();
    return lock;
  }

  private async take(keyOrKeys: string | readonly string[], options: AcquireOptions | undefined, nullOnTimeout: boolean): Promise<MultiLockHandle | null> {
    const keys = this.fullKeys(keyOrKeys);
    const resolved = resolveAcquireOptions(validateAcquireOptions(options), this.defaults);
    const deadline = Date.now() + resolved.waitTimeout;
    const taken: LockHandle[] = [];
    try {
      for (const key of keys) {
        const handle = await this.manager.acquire(key, resolved, nullOnTimeout, deadline);
        if (!handle) {
          await this.releaseQuietly(new MultiLockHandle(taken));
          return null;
        }
        taken.push(handle);
      }
    } catch (error) {
      await this.releaseQuietly(new MultiLockHandle(taken));
      throw error;
    }
    return new MultiLockHandle(taken);
  }

  /** Validates, prefixes, de-duplicates and sorts keys: one global order means no deadlock between callers. */
  private fullKeys(keyOrKeys: string | readonly string[]): string[] {
    // Not a string and not an array (a number, null, an object): the key itself is wrong.
    const list: readonly unknown[] = Array.isArray(keyOrKeys) ? keyOrKeys : [validateLockKey(keyOrKeys)];
    if (list.length === 0) {
      throw new InvalidLockOptionsError('key', 'expected a key or a non-empty array of keys.');
    }
    const full = list.map((key) => validateLockKey(this.keyPrefix + validateLockKey(key)));
    return [...new Set(full)].sort();
  }

  /**
   * Releases after a section. A failure to release is reported as a background error (the lease frees the
   * key by itself), except a failed commit of the section's writes, which the caller must hear about.
   */
  private releaseQuietly<R = void>(
    lock: Pick<Lock, 'keys'> & { releaseWith(outcome: ReleaseOutcome): Promise<boolean> },
    outcome: ReleaseOutcome = 'failed',
    after: () => R = () => undefined as R,
  ): Promise<R> {
    return lock.releaseWith(outcome).then(after, (error: unknown) => {
      if (error instanceof LockCommitFailedError && outcome === 'completed') throw error;
      // The original outcome matters more; the lease frees the key by itself. Reported, not swallowed.
      this.manager.events.emit('backgroundError', { strategy: this.strategyName, key: lock.keys.join(','), operation: 'release', error });
      return after();
    });
  }
}

function isThenable<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/** The loss of any of the lock's keys, once known (during the section or at its release). */
function lossOf(lock: Pick<Lock, 'throwIfLost'>): unknown {
  try {
    lock.throwIfLost();
    return undefined;
  } catch (error) {
    return error;
  }
}

/** The permit's loss, once known. */
function lossOfPermit(permit: PermitHandle): LockLostError | undefined {
  try {
    permit.throwIfLost();
    return undefined;
  } catch (error) {
    return error as LockLostError;
  }
}

/** Only a null-on-timeout acquisition (tryAcquire) resolves without a lock; any other has already thrown. */
function noLockGranted(): InvalidLockOptionsError {
  return new InvalidLockOptionsError('waitTimeout', 'no lock was granted');
}
