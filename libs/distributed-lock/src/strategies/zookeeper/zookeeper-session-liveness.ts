/**
 * Share of the session timeout by which a session is presumed expired before the server could expire it:
 * covers our timer firing late (a busy event loop) and the clocks of client and server not running at
 * quite the same rate. The server's own rounding (an expiry falls on the next tick) only adds to it.
 */
const LOSS_MARGIN_FRACTION = 0.1;

/** The margin never goes below this, in ms. */
const MIN_LOSS_MARGIN_MS = 100;

/**
 * A connected session is probed this many times per session timeout (an `exists` of "/"). The answers
 * tell when the server last heard from us; they replace the client's own pings (sent after a third
 * of the timeout without a request), which it does not report.
 */
const PROBES_PER_SESSION_TIMEOUT = 4;

/**
 * The clock of every count here: monotonic, so that a wall clock set back or forward moves nothing. It
 * runs on through a SIGSTOP, which is what lets a process that wakes from a freeze see how long it slept.
 */
export const livenessNow = (): number => performance.now();

/** What SessionLiveness needs of its session. */
export interface LivenessDeps {
  /** A cheap request; resolves once the server answered. */
  probe(): Promise<unknown>;
  /** The session timeout the server granted, in ms. */
  sessionTimeoutMs(): number;
  /** A time (`livenessNow`) at or before which the server last heard from us, to begin with. */
  heardAt: number;
  /** The session may have expired on the server by now (a timer saw it). */
  onPresumedExpired(): void;
}

/**
 * When a session may have expired on the server. The server expires a session one session timeout after
 * it last heard from the client (rounded up to its next tick), so the session is safe until then and no
 * longer. We cannot know that moment exactly, but we know a time at or before it: the sending of the last
 * request the server answered (it received it later), or of the (re)connect that it accepted. The session
 * is presumed expired at that time plus the negotiated session timeout, minus a margin
 * (LOSS_MARGIN_FRACTION): early rather than late, so a holder is never told after another one got in.
 *
 * Probes (PROBES_PER_SESSION_TIMEOUT) keep that time recent, so a cut at time c is reported between
 * about c + 0.65 × timeout (the last answered probe went out a probe interval before the cut) and c + 0.9 ×
 * timeout (it came right before the cut), plus however late our timer fires. The count starts when the
 * client raises 'connecting': at once when the connection breaks, at the latest two thirds of the
 * timeout after it last heard from the server (its receive timeout); if that is past the point already,
 * the session is given up at once. A reconnect before the point ('connect') cancels the count.
 *
 * A process that was frozen (SIGSTOP, a stalled VM, a long GC pause) runs none of that while it sleeps,
 * nor does the client, whose I/O runs on the same event loop: when it wakes, its timers fire late,
 * in an order of their own, and the client learns of the expiry only after a round trip. So
 * `presumedExpired()` compares the time since the server last heard from us with the same point, on
 * the monotonic clock, whenever it is asked: the session answers for itself at the first read or call
 * after waking, before any timer had the chance to run.
 */
export class SessionLiveness {
  private heardAt: number;
  private disconnectedAt: number | undefined;
  private probeTimer: NodeJS.Timeout | undefined;
  private probing = false;
  private lossTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private answered: Array<() => void> = [];

  constructor(private readonly deps: LivenessDeps) {
    this.heardAt = deps.heardAt;
  }

  /** Connected (again): the count stops, and probing starts with one probe now. */
  connected(): void {
    if (this.stopped) return;
    // A reconnect is sent after the disconnect was noticed, and the server accepted it.
    if (this.disconnectedAt !== undefined) this.heardAt = Math.max(this.heardAt, this.disconnectedAt);
    this.disconnectedAt = undefined;
    clearTimeout(this.lossTimer);
    this.lossTimer = undefined;
    this.probe();
    if (!this.probeTimer) {
      this.probeTimer = setInterval(() => this.tick(), Math.max(1, Math.floor(this.deps.sessionTimeoutMs() / PROBES_PER_SESSION_TIMEOUT)));
      this.probeTimer.unref?.();
    }
  }

  /** The connection is lost: the session is presumed expired unless it reconnects in time. */
  disconnected(): void {
    if (this.stopped || this.disconnectedAt !== undefined) return;
    this.disconnectedAt = livenessNow();
    this.lossTimer = setTimeout(() => {
      this.lossTimer = undefined;
      if (!this.stopped && this.disconnectedAt !== undefined) this.deps.onPresumedExpired();
    }, Math.max(0, this.presumedExpiredAt() - livenessNow()));
    this.lossTimer.unref?.();
  }

  /**
   * True once the server may have expired the session: it has not heard from us (as far as we know) for
   * the session timeout less the margin. Asked at reads and calls, so that a process that wakes from a
   * freeze learns it before any of its timers ran.
   */
  presumedExpired(): boolean {
    return !this.stopped && livenessNow() >= this.presumedExpiredAt();
  }

  /** Resolves at the next answered probe (one is sent now if none is on its way). */
  nextAnswer(): Promise<void> {
    return new Promise((resolve) => {
      this.answered.push(resolve);
      this.probe();
    });
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.probeTimer);
    clearTimeout(this.lossTimer);
    this.probeTimer = undefined;
    this.lossTimer = undefined;
  }

  private presumedExpiredAt(): number {
    const timeout = this.deps.sessionTimeoutMs();
    return this.heardAt + timeout - Math.max(MIN_LOSS_MARGIN_MS, timeout * LOSS_MARGIN_FRACTION);
  }

  /** Each probe interval: a session that may have expired meanwhile (a freeze) is said to have, then probed. */
  private tick(): void {
    if (this.presumedExpired()) this.deps.onPresumedExpired();
    this.probe();
  }

  private probe(): void {
    // One at a time: a probe sent into a lost connection fails with it, or is answered after a reconnect.
    if (this.stopped || this.probing) return;
    this.probing = true;
    const sentAt = livenessNow();
    this.deps.probe().then(
      () => {
        this.probing = false;
        this.heardAt = Math.max(this.heardAt, sentAt);
        const answered = this.answered;
        this.answered = [];
        for (const resolve of answered) resolve();
      },
      () => {
        this.probing = false; // lost with the connection: nothing learned
      },
    );
  }
}
