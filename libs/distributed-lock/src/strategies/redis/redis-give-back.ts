import { DistributedLockError } from '../../errors/distributed-lock.error';

/** The first retry of a give-back that could not reach Redis, in ms; each next one waits twice as long. */
const FIRST_RETRY_MS = 100;
/** The longest wait between two tries, in ms. */
const LONGEST_RETRY_MS = 2_000;

/**
 * True when a failed call may still have run on the server: the connection closed or was cut after the
 * call was sent, and the client gave up on its reply. An error reply of the server's (ioredis's
 * `ReplyError`: the script refused, or never ran) and this library's own errors (which already gave back
 * what they took) say what happened.
 */
export function outcomeUnknown(error: unknown): boolean {
  return !(error instanceof DistributedLockError) && (error as Error | null)?.name !== 'ReplyError';
}

/**
 * Acquisitions that failed without knowing whether Redis ran them: Redis may hold a grant (or a place in
 * line) that its caller never heard of, and would keep it for the whole lease. Each is given back by its
 * owner id, which is one acquisition's alone (so a give-back frees nothing anyone else holds), sent at once
 * and again, 100 ms apart and doubling up to 2 s, until one gets an answer or the lease would have ended.
 * A give-back queued while the client reconnects goes after any call the client sends again.
 */
export class RedisGiveBacks {
  private readonly timers = new Set<NodeJS.Timeout>();
  private closed = false;

  /**
   * An acquisition failed with `error`: when it may have run on the server, `giveBack` (which ends what it
   * may hold or wait for, and rejects if the server cannot be reached) is sent until it gets through.
   */
  afterFailure(error: unknown, giveBack: () => Promise<unknown>, ttlMs: number): void {
    if (outcomeUnknown(error)) this.send(giveBack, ttlMs);
  }

  /** Sends `giveBack` now, and again while it fails without an answer, for at most `ttlMs`. */
  send(giveBack: () => Promise<unknown>, ttlMs: number): void {
    if (!this.closed) this.attempt(giveBack, Date.now() + ttlMs, 0);
  }

  /** At close: the tries still to come are dropped (the leases end on the server by themselves). */
  close(): void {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  private attempt(giveBack: () => Promise<unknown>, untilMs: number, tries: number): void {
    giveBack().catch((error: unknown) => {
      // An error reply is an answer: the server ran it, nothing is left to give back.
      if (!outcomeUnknown(error)) return;
      const delayMs = Math.min(LONGEST_RETRY_MS, FIRST_RETRY_MS * 2 ** tries);
      if (this.closed || Date.now() + delayMs >= untilMs) return;
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        this.attempt(giveBack, untilMs, tries + 1);
      }, delayMs);
      timer.unref();
      this.timers.add(timer);
    });
  }
}
