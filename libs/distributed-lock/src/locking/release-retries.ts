import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import type { Deadline } from './deadline-clock';
import type { EngineContext } from './engine-context';
import type { LeaseGrant } from './lock-lease';
import type { LockStrategy, ReleaseOutcome } from './lock-strategy.interface';
import { simpleBoundedCall } from './waits/bounded-call';

/** The first retry of a release that could not reach the backend, in ms; each next one waits twice as long. */
const FIRST_RETRY_MS = 100;
/** The longest wait between two retries, in ms. */
const LONGEST_RETRY_MS = 2_000;

/**
 * Releases that failed because the backend could not be reached, tried again in the background until one
 * gets through or the lease would end first. Without them, a lock whose holder finished while its server
 * was away (a Sentinel failover: the release went to the dead master, the lock to the promoted replica)
 * stays taken for the rest of its lease, and every contender waits that out. The caller has still been
 * told that its release failed. Every store checks the owner on release, so a late one frees nothing that
 * another holder took meanwhile.
 */
export class ReleaseRetries {
  private readonly pending = new Set<Deadline>();
  private stopped = false;

  constructor(private readonly context: EngineContext) {}

  /**
   * Releases `lease` again later, when `error` says the backend could not be reached, until `untilMs` (when
   * the backend's lease ends at the latest: later than `lease.expiresAt` when a renewal was on its way).
   */
  readonly afterFailure = (ops: LockStrategy, lease: LeaseGrant, outcome: ReleaseOutcome, error: unknown, untilMs: number): void => {
    if (error instanceof LockBackendUnavailableError) this.schedule(ops, lease, outcome, untilMs, 0);
  };

  /** At close(): the retries still waiting are dropped (the leases end on the backend by themselves). */
  stop(): void {
    this.stopped = true;
    for (const deadline of this.pending) deadline.cancel();
    this.pending.clear();
  }

  private schedule(ops: LockStrategy, lease: LeaseGrant, outcome: ReleaseOutcome, untilMs: number, retries: number): void {
    let delayMs = Math.min(LONGEST_RETRY_MS, FIRST_RETRY_MS * 2 ** retries);
    // Near the lease's end, the next try comes halfway to it: the backend may be back before the end.
    const leftMs = untilMs - Date.now();
    if (delayMs >= leftMs) delayMs = leftMs / 2;
    if (this.stopped || delayMs < FIRST_RETRY_MS) return;
    const deadline = this.context.clock.after(delayMs, () => {
      this.pending.delete(deadline);
      this.retry(ops, lease, outcome, untilMs, retries);
    });
    this.pending.add(deadline);
  }

  /**
   * One more try. Not counted as background work that close() waits for: the backend is likely still away,
   * and close() should not wait out a bound for a lock whose lease ends on the backend anyway.
   */
  private retry(ops: LockStrategy, lease: LeaseGrant, outcome: ReleaseOutcome, untilMs: number, retries: number): void {
    const { clock, name, operationTimeout, events } = this.context;
    void simpleBoundedCall(clock, name, 'release', lease.key, operationTimeout, () => ops.release(lease, outcome)).then(
      () => undefined,
      (error: unknown) => {
        if (this.stopped) return;
        if (error instanceof LockBackendUnavailableError) this.schedule(ops, lease, outcome, untilMs, retries + 1);
        else events.emit('backgroundError', { strategy: name, key: lease.key, operation: 'release', error });
      },
    );
  }
}
