import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockCommitFailedError } from '../errors/lock-commit-failed.error';
import { currentLock, runWithHeldLocks } from './lock-context';
import type { LockEvents } from './lock-events';
import { LockHandle, MultiLockHandle, type Lock } from './lock-handle';
import { validateLockKey } from './lock-key';
import type { LockManager } from './lock-manager';
import { lockInfoOf, permitsInfoOf, type LockHolderInfo, type LockInfo, type LockPage, type PermitsInfo } from './lock-query';
import { validatePrefixQuery, type PrefixQueryOptions } from './prefix-query-options';
import { assertKnownKeys, LOCK_DEFAULTS, resolveAcquireOptions, validateAcquireOptions, type AcquireOptions, type LockDefaults } from './lock-options';
import type { LockStrategyCapabilities, ReleaseOutcome } from './lock-strategy.interface';
import { runWithPermit } from './permit-context';
import type { PermitHandle } from './permit-handle';
import { validatePermitOptions, type PermitOptions } from './permit-options';
import { completedSection, failedSection, lossOf } from './section-end';

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
   * `sectionResult`, for sections whose writes were fenced. A section that threw after (or while) losing its
   * lock rejects with the `LockLostError`, its own error as the `cause`. Where the release
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

  /** The section returned: release, and the result, unless the lock was lost (see section-end.ts). */
  private sectionDone<T>(lock: LockHandle | MultiLockHandle, result: T): Promise<T> {
    return this.releaseQuietly(lock, lossOf(lock) === undefined ? 'completed' : 'lost', () => completedSection(lossOf(lock), result));
  }

  /** The section threw: release, and its failure, or the loss with the failure as cause (see section-end.ts). */
  private sectionFailed(lock: LockHandle | MultiLockHandle, error: unknown): Promise<never> {
    return this.releaseQuietly(lock, 'failed', () => {
      throw failedSection(lossOf(lock), error);
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
      await this.releaseQuietly(permit, 'failed');
      throw failedSection(lossOf(permit), error);
    }
    await this.releaseQuietly(permit, lossOf(permit) === undefined ? 'completed' : 'lost');
    return completedSection(lossOf(permit), result);
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

  /**
   * Who holds `key` and who waits for it, as the backend says now: each holder's owner (its host and
   * process), mode, fencing token, grant time and lease end, and the backend's queue in the order it
   * serves it (`null` where the backend keeps none). For an operator's look at a stuck key; it reads only,
   * and takes nothing. A field the backend cannot tell is `null`. Throws `InvalidLockOptionsError` for a bad
   * key or a strategy that cannot answer (docs/operations.md lists them), and `LockBackendUnavailableError`
   * when the server does not answer within the operation timeout.
   *
   * @example
   * const { held, pending } = await locks.query('stock-report');
   * if (held[0]) console.log(`held by ${held[0].owner.host} (pid ${held[0].owner.pid}) until ${new Date(held[0].expiresAt ?? 0).toISOString()}`);
   */
  async query(key: string): Promise<LockInfo> {
    const fullKey = this.fullKey(key);
    return lockInfoOf(key, await this.manager.operator.inspect(fullKey));
  }

  /**
   * Every key beginning with `prefix` that someone holds or waits for now, with its holders and waiters as
   * `query` gives them, a page at a time: at most `limit` keys (default 100), and `next`, the cursor of the
   * following page (null on the last). Bounded work on the server per page; the backend's order. For an
   * operator's look at a family of keys (`'stock:'`, a job's `perRun` locks). Throws `InvalidLockOptionsError`
   * for bad options or a strategy that cannot list keys (docs/operations.md lists them), before touching it.
   *
   * @example
   * for (let cursor: string | null = null; ; ) {
   *   const page = await locks.queryPrefix('stock:', { cursor });
   *   for (const lock of page.locks) console.log(lock.key, lock.held.map((holder) => holder.owner.instance));
   *   if (!(cursor = page.next)) break;
   * }
   */
  async queryPrefix(prefix: string, options?: PrefixQueryOptions): Promise<LockPage> {
    const query = validatePrefixQuery(prefix, options);
    const listing = await this.manager.operator.listKeys(this.keyPrefix + query.prefix, { cursor: query.cursor, limit: query.limit });
    const inspections = await Promise.all(listing.keys.map((key) => this.manager.operator.inspect(key)));
    // A key released between the listing and its read is no longer held or waited for: not listed.
    const locks = listing.keys
      .map((key, i) => lockInfoOf(key.slice(this.keyPrefix.length), inspections[i]))
      .filter((lock) => lock.held.length > 0 || (lock.pending?.length ?? 0) > 0);
    return { locks, next: listing.next ?? null };
  }

  /**
   * Who holds places of semaphore `key` and who waits for them, as the backend says now: its size, the
   * places in use, each holder's owner, weight, fencing token, grant time and lease end, and the backend's
   * queue in the order it serves it (`null` where waiters poll). Reads only. Throws as `query` does.
   *
   * @example
   * const { permits, inUse, held } = await locks.queryPermits('payments');
   * console.log(`${inUse} of ${permits} places taken by`, held.map((holder) => holder.owner.host));
   */
  async queryPermits(key: string): Promise<PermitsInfo> {
    const fullKey = validateLockKey(this.keyPrefix + validateLockKey(key, 'Semaphore key'), 'Semaphore key');
    return permitsInfoOf(key, await this.manager.operator.inspectPermits(fullKey));
  }

  /**
   * Break-glass release, for an operator, not for the app's normal path: ends every hold of `key` whoever
   * holds it, and lets the next waiter in. `reason` (required: who breaks it, and why) is recorded with the
   * holders broken in the lock service's `broken` event. Resolves the holds it ended. Where the backend can
   * tell the holder at once, its signal aborts with `LockLostError` (`reason: 'broken'`; `'session-ended'` on
   * the database strategies, whose break ends the holder's connection); elsewhere the holder finds out at its
   * next extension or release (`extension-refused`, `not-held-at-release`). Either way its section ends in
   * `LockLostError`, and the next grant's fencing token is higher than the broken one's, so the broken
   * holder's fenced writes are refused. On the database strategies it resolves once the server no longer
   * shows the key held by the broken connection. docs/operations.md lists the strategies that can.
   *
   * @example
   * await locks.breakLock('stock-report', { reason: 'ops: job stuck on host-3 since 02:00 (ticket 4711)' });
   */
  async breakLock(key: string, options: { readonly reason: string }): Promise<readonly LockHolderInfo[]> {
    const fullKey = this.fullKey(key);
    assertKnownKeys(options, ['reason'], 'breakLock options');
    const { reason } = options;
    if (typeof reason !== 'string' || reason.trim().length === 0 || reason.length > 500) {
      throw new InvalidLockOptionsError('reason', 'breakLock needs a reason: who breaks the lock, and why (a non-empty string of at most 500 characters).');
    }
    return lockInfoOf(key, { holders: await this.manager.operator.breakLock(fullKey, reason) }).held;
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

/** Only a null-on-timeout acquisition (tryAcquire) resolves without a lock; any other has already thrown. */
function noLockGranted(): InvalidLockOptionsError {
  return new InvalidLockOptionsError('waitTimeout', 'no lock was granted');
}
