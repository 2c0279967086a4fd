import type { Deadline, DeadlineClock } from './deadline-clock';

/** What the watchdog needs from the lock it keeps alive. */
export interface WatchdogTarget {
  /** Local time (ms since epoch) at which the current lease ends. */
  expiresAt(): number;
  /** Try one extension. Resolves true when renewed, false when refused (lost); rejects when the backend failed. */
  renew(): Promise<boolean>;
  /** The lease ran out before a renewal got through, or was refused. */
  onGone(reason: 'extension-refused' | 'backend-unreachable' | 'expired'): void;
  /** A renewal attempt failed but the lease still has time left; it will be retried. */
  onRenewFailed(error: unknown): void;
}

/**
 * A grant with less than this share of the lease it was asked for left is topped up right away, also
 * without auto-extension: a hand-over that only reserves the lock for a short claim (Redis fair mode),
 * or a backend lease that partly ran while its holder waited in line, still lasts the lease the caller asked for.
 */
const TOP_UP_BELOW = 0.9;

/**
 * Keeps a lease alive (Redisson calls this the watchdog): renews at `intervalMs`, retries sooner after a
 * failed renewal, and declares the lease gone once its end passes without a renewal. Without renewal
 * (`intervalMs` undefined) it only fires `onGone('expired')` at the lease's end, so a holder that
 * outlives an explicit TTL is told. Either way, the first renewal comes before half of what is left of
 * the grant has passed, however the grant was obtained. Its deadlines are on the lock manager's clock, which
 * never keeps a process alive for them.
 */
export class LeaseWatchdog {
  private timer: Deadline | undefined;
  private stopped = false;
  /** One renewal is due although the lock does not auto-extend (see TOP_UP_BELOW). */
  private topUpDue = false;
  /** A renewal was attempted. */
  private tried = false;
  /** A renewal failed while the lease still had time left: the backend, not the lease's end, failed it. */
  private failedInTime = false;

  constructor(
    private readonly target: WatchdogTarget,
    private readonly intervalMs: number | undefined,
    /** The lease the caller asked for, in ms. */
    private readonly leaseMs: number,
    /** The lock manager's clock: a deadline on it, not a timer of its own. */
    private readonly clock: DeadlineClock,
  ) {}

  start(): void {
    this.topUpDue = this.intervalMs === undefined && this.untilExpiry() < this.leaseMs * TOP_UP_BELOW;
    this.schedule(this.nextDelay());
  }

  /** Re-arm after a manual extension. */
  reset(): void {
    if (this.stopped) return;
    this.topUpDue = false;
    this.schedule(this.nextDelay());
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = undefined;
  }

  private get renewing(): boolean {
    return this.intervalMs !== undefined || this.topUpDue;
  }

  /** The next renewal: at the interval, but never later than half of what is left; or the lease's end. */
  private nextDelay(): number {
    const left = this.untilExpiry();
    if (!this.renewing) return left;
    return Math.min(this.intervalMs ?? left, Math.floor(left / 2));
  }

  private untilExpiry(): number {
    return Math.max(0, this.target.expiresAt() - Date.now());
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer?.cancel();
    this.timer = this.clock.after(Math.max(0, delayMs), this.fire);
  }

  private readonly fire = (): void => void this.tick();

  private async tick(): Promise<void> {
    if (this.stopped) return;
    const left = this.untilExpiry();
    if (!this.renewing) {
      // Timers may fire a little early: only a lease whose end has passed is gone.
      if (left > 0) return this.schedule(left);
      this.stop();
      this.target.onGone('expired');
      return;
    }
    if (left <= 0) {
      this.stop();
      // Over before any renewal was tried (a grant that came too late): it expired, nothing failed.
      this.target.onGone(this.tried ? 'backend-unreachable' : 'expired');
      return;
    }
    this.tried = true;
    let renewed: boolean;
    try {
      renewed = await this.target.renew();
    } catch (error) {
      if (this.stopped) return;
      const stillLeft = this.untilExpiry();
      // A lock that does not auto-extend was only being topped up: a top-up still unanswered when the lease
      // ended (the lock service bounds a renewal by it) leaves the lease the caller set to run out. Nothing
      // failed that the caller asked for: no renewal failure is reported either.
      if (stillLeft <= 0 && this.intervalMs === undefined && !this.failedInTime) {
        this.stop();
        this.target.onGone('expired');
        return;
      }
      this.target.onRenewFailed(error);
      if (stillLeft <= 0) {
        this.stop();
        this.target.onGone('backend-unreachable');
      } else {
        this.failedInTime = true;
        // Retry well before the end so that one slow answer does not cost the lease.
        this.schedule(Math.min(this.intervalMs ?? stillLeft, Math.max(10, stillLeft / 3)));
      }
      return;
    }
    if (this.stopped) return;
    if (!renewed) {
      this.stop();
      this.target.onGone('extension-refused');
      return;
    }
    this.topUpDue = false;
    this.schedule(this.nextDelay());
  }
}
