import { setTimeout as sleep } from 'node:timers/promises';
import type { LockDataSource } from './database-client.type';

/** The pause after a cancel that left the wait going, before the next one: doubled each time, up to the cap. */
const FIRST_PAUSE_MS = 20;
const LONGEST_PAUSE_MS = 1_000;

/**
 * Past the waiting statement's own bound on the server, counted from the first cancel, the resends go on
 * this long: for a statement still on its way then, and for InnoDB, which notices a lock wait timeout up
 * to about a second late.
 */
const SLACK_MS = 2_000;

/** MySQL/MariaDB: no such thread (the connection is gone), not yours to kill. PostgreSQL: not allowed. */
const FUTILE_ERRNOS = [1094, 1095];
const FUTILE_CODES = ['42501'];

/**
 * A cancel (KILL QUERY, pg_cancel_backend) sent from another connection of the pool again and again until
 * the wait it is meant for is over. Once is not always enough: a cancel that reaches the server before the
 * waiting statement has started there lands on nothing (MySQL and MariaDB forget a KILL QUERY when the
 * connection's next statement starts; PostgreSQL drops a cancel for an idle backend). The statement would
 * then wait out its whole bound, and take the lock when the holder lets go: after the caller that gave up
 * was told so. Another cancel once the wait is running ends it.
 *
 * The resends stop at `stop()` (the wait ended), once the wait's own bound on the server (`serverBoundMs`,
 * which every statement the cancel may target has) has passed since the first cancel (the statement then
 * ended there by itself, having been sent before it), or when the server says the cancel can never land
 * (no such connection, not allowed): no stream of cancels for ids that may, after a failover, name someone
 * else's session. The strategy sends no statement that waits once the cancel has started.
 */
export class RepeatedCancel {
  private readonly over = new AbortController();
  /** The cancel sent and not answered yet (it resolves with the answer or the error, never rejects). */
  private sent: Promise<unknown> | undefined;
  private running = false;
  /** When the resends end (performance.now()), set by start(). */
  private until = 0;

  constructor(
    private readonly dataSource: LockDataSource,
    private readonly statement: string,
    private readonly serverBoundMs: number,
  ) {}

  /** A cancel was started: a statement that waits must not be sent now. */
  get started(): boolean {
    return this.running;
  }

  start(): void {
    if (this.running || this.over.signal.aborted) return;
    this.running = true;
    this.until = performance.now() + this.serverBoundMs + SLACK_MS;
    void this.resend();
  }

  /**
   * The wait is over: no more cancels. Resolves once a cancel already sent was answered, so that it cannot
   * land on the connection's next statement. One still waiting for a pool connection is never sent: when
   * every connection is pinned by waits, a cancel can wait for one for good.
   */
  async stop(): Promise<void> {
    this.over.abort();
    await this.sent;
  }

  private async resend(): Promise<void> {
    for (let pause = FIRST_PAUSE_MS; ; pause = Math.min(pause * 2, LONGEST_PAUSE_MS)) {
      if (await this.sendOnce()) return;
      await sleep(pause, undefined, { signal: this.over.signal }).catch(() => undefined);
      if (this.over.signal.aborted || performance.now() >= this.until) return;
    }
  }

  /** Sends the cancel once, unless the wait ended while a connection was taken. True: sending again is pointless. */
  private async sendOnce(): Promise<boolean> {
    const runner = this.dataSource.createQueryRunner();
    try {
      await runner.connect();
      if (this.over.signal.aborted) return true;
      const answered = runner.query(this.statement).then(
        (rows: unknown) => rows,
        (error: unknown) => error,
      );
      this.sent = answered;
      return isFutile(await answered);
    } catch (error) {
      return isFutile(error);
    } finally {
      this.sent = undefined;
      await runner.release().catch(() => undefined);
    }
  }
}

/** The server's answer says no cancel for this id can land: the connection is gone, or we may not cancel it. */
function isFutile(answer: unknown): boolean {
  // pg_cancel_backend answers false when there is no such backend.
  if (Array.isArray(answer)) return Object.values((answer[0] ?? {}) as Record<string, unknown>).includes(false);
  const error = answer as { errno?: unknown; code?: unknown; driverError?: { errno?: unknown; code?: unknown } } | null;
  const driver = error?.driverError ?? error;
  return FUTILE_ERRNOS.includes(Number(driver?.errno)) || FUTILE_CODES.includes(String(driver?.code));
}
