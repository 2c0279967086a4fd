import { connect, type Socket } from 'node:net';

/**
 * CLOCK_MONOTONIC in seconds, the clock memcached reads for its own: `process.hrtime` reads it on Linux, so
 * its whole seconds are memcached's.
 */
export function monotonicSeconds(): number {
  return Number(process.hrtime.bigint()) / 1e9;
}

/** Resolves once CLOCK_MONOTONIC reaches `at` (seconds, see `monotonicSeconds`). */
export async function untilMonotonic(at: number): Promise<void> {
  for (let left = at - monotonicSeconds(); left > 0; left = at - monotonicSeconds()) {
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Math.min(left * 1_000 - 2, 50))));
  }
}

/**
 * memcached's clock as `stats` shows it (`STAT time`), over one connection of its own. memcached moves that
 * clock once a second, by a timer it sets one second after the last tick: the tick is what `nextTick` finds.
 */
export class MemcachedClock {
  private readonly socket: Socket;
  private buffer = '';
  private waiting: ((reply: string) => void) | undefined;

  constructor(host: string, port: number) {
    this.socket = connect(port, host);
    this.socket.setNoDelay(true);
    this.socket.on('data', (chunk: Buffer) => {
      this.buffer += chunk.toString('latin1');
      const end = this.buffer.indexOf('END\r\n');
      if (end < 0) return;
      const reply = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 5);
      const waiting = this.waiting;
      this.waiting = undefined;
      waiting?.(reply);
    });
  }

  /** memcached's time now: its start time plus its clock, in whole seconds. */
  async seconds(): Promise<number> {
    const reply = await new Promise<string>((resolve) => {
      this.waiting = resolve;
      this.socket.write('stats\r\n');
    });
    const time = /STAT time (\d+)/.exec(reply);
    if (!time) throw new Error(`no "STAT time" in memcached's stats: ${reply.slice(0, 200)}`);
    return Number(time[1]);
  }

  /**
   * The next tick of memcached's clock: when it was seen (monotonic seconds, within a millisecond or two of
   * it) and by how many seconds the clock moved. `before`: the clock as read earlier (by default, read now),
   * for a tick that may come before this call's first read can: a stopped server's overdue tick, which it
   * runs as it resumes, before the read reaches it.
   */
  async nextTick(withinMs = 3_000, before?: number): Promise<{ at: number; moved: number }> {
    before ??= await this.seconds();
    const giveUpAt = monotonicSeconds() + withinMs / 1_000;
    while (monotonicSeconds() < giveUpAt) {
      const now = await this.seconds();
      if (now !== before) return { at: monotonicSeconds(), moved: now - before };
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    throw new Error(`memcached's clock did not move within ${withinMs} ms`);
  }

  close(): void {
    this.socket.destroy();
  }
}
