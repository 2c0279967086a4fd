import type { ShopInstance } from './instances';

/** What the buyers saw. */
export interface SaleOutcome {
  readonly created: number;
  readonly soldOut: number;
  readonly busy: number;
  readonly failed: number;
  readonly latenciesMs: number[];
  readonly durationMs: number;
  /** When the last order was placed, from the start of the sale (the sell-out time when it sold out). */
  readonly lastOrderAtMs: number;
  readonly statusCounts: Record<string, number>;
}

/**
 * `buyers` concurrent purchases (at most `concurrency` in flight), spread round-robin over the
 * instances. Every request has its own timeout, so the sale always ends.
 */
export async function runFlashSale(
  instances: readonly ShopInstance[],
  options: { sku: string; mode: string; buyers: number; concurrency: number; onProgress?: (done: number) => void },
): Promise<SaleOutcome> {
  const latenciesMs: number[] = [];
  const statusCounts: Record<string, number> = {};
  let next = 0;
  let done = 0;
  let created = 0;
  let soldOut = 0;
  let busy = 0;
  let failed = 0;
  let lastOrderAtMs = 0;
  const started = performance.now();
  const worker = async (): Promise<void> => {
    while (next < options.buyers) {
      const buyer = next;
      next += 1;
      const instance = instances[buyer % instances.length];
      const t0 = performance.now();
      let status = 'error';
      try {
        const response = await fetch(`http://127.0.0.1:${instance.port}/buy`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ sku: options.sku, buyer: `buyer-${buyer}`, mode: options.mode }),
          signal: AbortSignal.timeout(90_000),
        });
        const body = (await response.json()) as { error?: string };
        status = response.status === 201 ? '201' : `${response.status} ${body.error ?? ''}`.trim();
        if (response.status === 201) {
          created += 1;
          latenciesMs.push(performance.now() - t0);
          lastOrderAtMs = performance.now() - started;
        } else if (body.error === 'SOLD_OUT') soldOut += 1;
        else if (response.status === 423 || response.status === 503) busy += 1;
        else failed += 1;
      } catch (error) {
        failed += 1;
        status = error instanceof Error ? error.name : 'error';
      }
      statusCounts[status] = (statusCounts[status] ?? 0) + 1;
      done += 1;
      options.onProgress?.(done);
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency, options.buyers) }, worker));
  return { created, soldOut, busy, failed, latenciesMs, durationMs: performance.now() - started, lastOrderAtMs, statusCounts };
}
