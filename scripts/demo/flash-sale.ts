import type { ShopInstance } from './instances';
import { preciseNow } from '../../apps/demo-inventory/src/clock/precise-now';

/** What the buyers saw. */
export interface SaleOutcome {
  readonly created: number;
  readonly soldOut: number;
  readonly busy: number;
  readonly failed: number;
  readonly latenciesMs: number[];
  readonly durationMs: number;
  /**
   * When the last order was placed (its item taken and its guard let go, as the shop reports), from the start
   * of the sale: the sell-out time when it sold out. The payment that follows is not in it: a burst of orders
   * queues for the payment semaphore, and its answers come later than its sales.
   */
  readonly lastOrderAtMs: number;
  /** When the last order's answer came, payment included, from the start of the sale. */
  readonly lastAnswerAtMs: number;
  readonly statusCounts: Record<string, number>;
  /** The first few answers that were not the shop's (not JSON, or no answer at all), with when and what came. */
  readonly oddAnswers: string[];
  /**
   * Purchases sent again after the shop's HTTP server answered 408 with no body (it never read the request,
   * so a client may repeat it: RFC 9110, 15.5.9): for each, how long the buyer had waited for that 408, in ms.
   * Seen with the ZooKeeper strategy after a leader kill: the `zookeeper` package's binding can leave one of
   * the process's sockets unread (docs/strategies/zookeeper.md, "Another socket of the process left unread").
   */
  readonly resent408AfterMs: number[];
}

/** How many odd answers a sale keeps for its report. */
const ODD_ANSWERS_KEPT = 5;

/**
 * `buyers` concurrent purchases (at most `concurrency` in flight), spread round-robin over the
 * instances. Every request has its own timeout, so the sale always ends.
 */
export async function runFlashSale(
  instances: ReadonlyArray<Pick<ShopInstance, 'port'>>,
  options: { sku: string; mode: string; buyers: number; concurrency: number; onProgress?: (done: number) => void },
): Promise<SaleOutcome> {
  const latenciesMs: number[] = [];
  const statusCounts: Record<string, number> = {};
  const oddAnswers: string[] = [];
  const noteOdd = (status: string, detail: string): void => {
    if (oddAnswers.length < ODD_ANSWERS_KEPT) oddAnswers.push(`${status} after ${Math.round(performance.now() - started)} ms into the sale: ${detail}`);
  };
  let next = 0;
  let done = 0;
  let created = 0;
  let soldOut = 0;
  let busy = 0;
  let failed = 0;
  let lastOrderAtMs = 0;
  let lastAnswerAtMs = 0;
  const resent408AfterMs: number[] = [];
  const started = performance.now();
  // On the clock the shops stamp `placedAt` with (the machine's, in ms since the epoch, below the millisecond).
  const startedAtEpoch = preciseNow();
  const worker = async (): Promise<void> => {
    while (next < options.buyers) {
      const buyer = next;
      next += 1;
      const instance = instances[buyer % instances.length];
      const t0 = performance.now();
      let status = 'error';
      try {
        const send = (): Promise<Response> =>
          fetch(`http://127.0.0.1:${instance.port}/buy`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ sku: options.sku, buyer: `buyer-${buyer}`, mode: options.mode }),
            signal: AbortSignal.timeout(90_000),
          });
        let response = await send();
        let text = await response.text();
        if (response.status === 408 && text === '') {
          // The server never read the request (its 408 has no body and closes the connection): sent again, once.
          const waitedMs = Math.round(performance.now() - t0);
          resent408AfterMs.push(waitedMs);
          noteOdd('408 resent', `the server did not read the request within ${waitedMs} ms`);
          response = await send();
          text = await response.text();
        }
        const body = jsonOrUndefined(text);
        if (!body) {
          // Not the shop's JSON (the HTTP server's own answer, say): its status, delay and start say what it was.
          failed += 1;
          status = `${response.status} not JSON`;
          noteOdd(status, `answered in ${Math.round(performance.now() - t0)} ms, ${JSON.stringify(text.slice(0, 80))}`);
        } else {
          status = response.status === 201 ? '201' : `${response.status} ${body.error ?? ''}`.trim();
          if (response.status === 201) {
            created += 1;
            latenciesMs.push(performance.now() - t0);
            lastAnswerAtMs = performance.now() - started;
            lastOrderAtMs = Math.max(lastOrderAtMs, typeof body.placedAt === 'number' ? body.placedAt - startedAtEpoch : lastAnswerAtMs);
          } else if (body.error === 'SOLD_OUT') soldOut += 1;
          else if (response.status === 423 || response.status === 503) busy += 1;
          else failed += 1;
        }
      } catch (error) {
        failed += 1;
        status = error instanceof Error ? error.name : 'error';
        noteOdd(status, `after ${Math.round(performance.now() - t0)} ms, ${error instanceof Error ? error.message : String(error)}`);
      }
      statusCounts[status] = (statusCounts[status] ?? 0) + 1;
      done += 1;
      options.onProgress?.(done);
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency, options.buyers) }, worker));
  return { created, soldOut, busy, failed, latenciesMs, durationMs: performance.now() - started, lastOrderAtMs, lastAnswerAtMs, statusCounts, oddAnswers, resent408AfterMs };
}

function jsonOrUndefined(text: string): { error?: string; placedAt?: unknown } | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null ? (parsed as { error?: string; placedAt?: unknown }) : undefined;
  } catch {
    return undefined;
  }
}
