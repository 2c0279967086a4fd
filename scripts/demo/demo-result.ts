/** One strategy's sale, as written to results.json. */
export interface DemoResultRow {
  strategy: string;
  mode: string;
  database: string;
  instances: number;
  buyers: number;
  initialStock: number;
  finalStock: number;
  orders: number;
  /** Orders beyond what the stock allowed, or without their deduction. */
  oversold: number;
  /** Optimistic re-runs after a version conflict. */
  conflicts: number;
  /** Buyers turned away: sold out. */
  rejected: number;
  /** Buyers that got a lock error (busy 423, backend 503) or failed otherwise. */
  errors: number;
  ordersPerSec: number;
  p50Ms: number;
  p99Ms: number;
  durationMs: number;
  /** When the last purchase was done (its item taken, its guard let go), from the start of the sale; its payment is not in it. */
  sellOutMs: number;
  /** When the last order's answer came, its payment included, from the start of the sale. */
  lastAnswerMs: number;
  /**
   * Share of the sale during which someone held the stock lock, from the first hold to the last order
   * (the buyers queue for the lock then); null where no lock is taken. 1 would mean the hand-overs between
   * buyers cost nothing.
   */
  utilization: number | null;
  /**
   * The same over the whole run, with the sold-out buyers' short reads after the last order: there the
   * buyers' requests, not the lock, are the bottleneck.
   */
  utilizationWholeRun: number | null;
  /** orders = initial − final, final ≥ 0, orders ≤ initial, one 201 per order. */
  invariantHolds: boolean;
  guarded: boolean;
  /** Payment calls made (one per order), each under a permit of the payment semaphore. */
  paymentCalls: number;
  /** The most payment calls running at once, across the instances: never above `paymentPermits`. */
  paymentPeak: number;
  /** The payment semaphore's size. */
  paymentPermits: number;
}

export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** The table printed at the end of `npm run demo`. */
export function renderTable(rows: readonly DemoResultRow[]): string {
  const header = ['strategy', 'db', 'sold', 'oversold', 'final stock', 'orders', 'conflicts', 'rejected', 'errors', 'sold out s', 'lock busy', 'busy, run', 'p50 ms', 'p99 ms', 'payments at once', 'invariant'];
  const lines = rows.map((r) => [
    r.strategy,
    r.database,
    String(r.orders),
    String(r.oversold),
    String(r.finalStock),
    String(r.orders),
    String(r.conflicts),
    String(r.rejected),
    String(r.errors),
    (r.sellOutMs / 1000).toFixed(2),
    r.utilization === null ? '-' : `${Math.round(r.utilization * 100)} %`,
    r.utilizationWholeRun === null ? '-' : `${Math.round(r.utilizationWholeRun * 100)} %`,
    String(r.p50Ms),
    String(r.p99Ms),
    `${r.paymentPeak} / ${r.paymentPermits}`,
    r.invariantHolds ? 'ok' : r.guarded ? 'VIOLATED' : 'broken (expected)',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const format = (cells: string[]): string => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [format(header), widths.map((w) => '-'.repeat(w)).join('  '), ...lines.map(format)].join('\n');
}
