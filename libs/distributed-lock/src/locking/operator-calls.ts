import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockServiceClosedError } from '../errors/lock-service-closed.error';
import type { LockEvents } from './lock-events';
import type { LockLedger } from './lock-ledger';
import type { KeyListing, LockInspection, SemaphoreInspection } from './lock-query';
import type { LockStrategy } from './lock-strategy.interface';
import { boundedCall, simpleBoundedCall } from './waits/bounded-call';

/**
 * The operator's calls of a lock manager (`LockService.query`, `queryPrefix`, `queryPermits`, `breakLock`):
 * each refused before any server is touched where the strategy cannot answer it, then bounded by the
 * operation timeout, as every server call is. None of it is on an acquisition's path.
 */
export class OperatorCalls {
  constructor(
    private readonly strategy: LockStrategy,
    private readonly name: string,
    private readonly ledger: Pick<LockLedger, 'closed' | 'clock' | 'operationTimeout'>,
    private readonly events: LockEvents,
  ) {}

  /**
   * What the backend says of `key` (full key) now: its holders and waiters (see `LockService.query`).
   * Throws `InvalidLockOptionsError` for a strategy that cannot tell.
   */
  async inspect(key: string): Promise<LockInspection> {
    return this.call(key, 'query', this.strategy.inspect)();
  }

  /**
   * The keys under `prefix` (full) held or waited for now, one page (see `LockService.queryPrefix`). Throws
   * `InvalidLockOptionsError` for a strategy that cannot list them.
   */
  async listKeys(prefix: string, page: { readonly cursor?: string; readonly limit: number }): Promise<KeyListing> {
    const list = this.strategy.listKeys;
    if (!list) {
      throw new InvalidLockOptionsError('strategy', `strategy "${this.name}" cannot answer queryPrefix(): the strategies that can are listed in docs/operations.md.`);
    }
    if (this.ledger.closed) throw new LockServiceClosedError(this.name, 'queryPrefix', 0, { key: prefix });
    return simpleBoundedCall(this.ledger.clock, this.name, 'queryPrefix', prefix, this.ledger.operationTimeout, () => list.call(this.strategy, prefix, page));
  }

  /**
   * What the backend says of semaphore `key` (full key) now: its size, holders and waiters (see
   * `LockService.queryPermits`). Throws `InvalidLockOptionsError` for a strategy whose semaphores cannot tell.
   */
  async inspectPermits(key: string): Promise<SemaphoreInspection> {
    const semaphore = this.strategy.semaphore;
    return this.call(key, 'queryPermits', semaphore?.inspect?.bind(semaphore))();
  }

  /**
   * Ends every hold of `key` (full key) as an operator would, and records who broke what in the `broken`
   * event, also when the break failed on its way (see `LockService.breakLock`).
   */
  async breakLock(key: string, reason: string): Promise<LockInspection['holders']> {
    const run = this.call(key, 'breakLock', this.strategy.breakLock);
    let broken: LockInspection['holders'];
    try {
      broken = await run();
    } catch (error) {
      // It may have ended some holds before it failed or ran out of time: the record says it was tried.
      this.events.emit('broken', { strategy: this.name, key, reason, owners: null, error });
      throw error;
    }
    this.events.emit('broken', { strategy: this.name, key, reason, owners: broken.map((holder) => holder.owner) });
    return broken;
  }

  /**
   * An operator's call on `key` (`query`, `breakLock`), once allowed: refused here when the strategy has no
   * `method`, the key is one it cannot store, or the service is closed; then bounded by the operation
   * timeout, as every server call is.
   */
  private call<T>(key: string, operation: string, method: ((key: string, signal: AbortSignal) => Promise<T>) | undefined): () => Promise<T> {
    if (!method) {
      throw new InvalidLockOptionsError('strategy', `strategy "${this.name}" cannot answer ${operation}(): the strategies that can are listed in docs/operations.md.`);
    }
    this.strategy.validateKey?.(key);
    if (this.ledger.closed) throw new LockServiceClosedError(this.name, operation, 0, { key });
    return () => {
      // Aborted once the caller has its answer otherwise (the bound ran out, or the call failed): a call of
      // several steps (a break that ends sessions, then looks until they are gone) starts none after that.
      const gaveUp = new AbortController();
      return boundedCall<T>({
        clock: this.ledger.clock,
        strategy: this.name,
        operation,
        key,
        timeoutMs: this.ledger.operationTimeout,
        run: () => method.call(this.strategy, key, gaveUp.signal),
        catch: (error) => {
          gaveUp.abort(error);
          throw error;
        },
      });
    };
  }
}
