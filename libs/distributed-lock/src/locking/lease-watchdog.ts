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
 * Keeps a lease alive (Redisson calls this the watchdog): renews at `intervalMs`, retries sooner after a
 * failed renewal, and declares the lease gone once its end passes without a renewal. Without renewal
 * (`intervalMs` undefined) it only fires `onGone('expired')` at the lease's end, so a holder that
 * outlives an explicit TTL is told. Timers are unref'd: they never keep a process alive.
 */
export class LeaseWatchdog {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly target: WatchdogTarget,
    private readonly intervalMs: number | undefined,
  ) {}

  start(): void {
    this.schedule(this.intervalMs ?? this.untilExpiry());
  }

  /** Re-arm after a manual extension. */
  reset(): void {
    if (this.stopped) return;
    this.schedule(this.intervalMs ?? this.untilExpiry());
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private untilExpiry(): number {
    return Math.max(0, this.target.expiresAt() - Date.now());
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.tick(), Math.max(0, delayMs));
    this.timer.unref?.();
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    if (this.intervalMs === undefined || this.untilExpiry() <= 0) {
      this.stop();
      this.target.onGone(this.intervalMs === undefined ? 'expired' : 'backend-unreachable');
      return;
    }
    let renewed: boolean;
    try {
      renewed = await this.target.renew();
    } catch (error) {
      if (this.stopped) return;
      this.target.onRenewFailed(error);
      const left = this.untilExpiry();
      if (left <= 0) {
        this.stop();
        this.target.onGone('backend-unreachable');
      } else {
        // Retry well before the end so that one slow answer does not cost the lease.
        this.schedule(Math.min(this.intervalMs, Math.max(10, left / 3)));
      }
      return;
    }
    if (this.stopped) return;
    if (!renewed) {
      this.stop();
      this.target.onGone('extension-refused');
      return;
    }
    this.schedule(this.intervalMs);
  }
}
