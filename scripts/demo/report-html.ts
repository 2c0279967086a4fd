import type { DemoResultRow } from './demo-result';
import { paymentsSvg, type PaymentTimeline } from './payments-svg';
import type { WaitDistribution } from './lock-wait-metrics';
import { timelineSvg, type SaleTimeline } from './timeline-svg';
import { waitCdfSvg } from './wait-cdf-svg';

const escape = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A horizontal bar chart as inline SVG: one bar (or a pair) per strategy. */
function barChart(id: string, title: string, unit: string, rows: readonly DemoResultRow[], series: Array<{ label: string; value: (r: DemoResultRow) => number; colour: string }>): string {
  const rowHeight = 18 * series.length + 10;
  const left = 170;
  const width = 720;
  const max = Math.max(1, ...rows.flatMap((r) => series.map((s) => s.value(r))));
  const bars = rows
    .map((r, i) => {
      const y = 30 + i * rowHeight;
      const label = `<text x="${left - 8}" y="${y + 13}" text-anchor="end" class="label">${escape(r.strategy)}</text>`;
      const rects = series
        .map((s, j) => {
          const value = s.value(r);
          const w = Math.max(value > 0 ? 2 : 0, Math.round(((width - left - 80) * value) / max));
          const by = y + j * 18;
          return `<rect class="bar" data-series="${escape(s.label)}" data-strategy="${escape(r.strategy)}" x="${left}" y="${by}" width="${w}" height="14" fill="${s.colour}"><title>${escape(`${r.strategy} ${s.label}: ${value} ${unit}`)}</title></rect><text x="${left + w + 6}" y="${by + 12}" class="value">${value}</text>`;
        })
        .join('');
      return label + rects;
    })
    .join('');
  const legend = series.map((s, j) => `<rect x="${left + j * 120}" y="6" width="10" height="10" fill="${s.colour}"/><text x="${left + j * 120 + 14}" y="15" class="legend">${escape(s.label)}</text>`).join('');
  const height = 40 + rows.length * rowHeight;
  return `<figure id="${id}"><figcaption>${escape(title)} (${escape(unit)})</figcaption><svg class="chart" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="${escape(title)}">${legend}${bars}</svg></figure>`;
}

/**
 * A self-contained page (no script, no external file) with the sale's table, charts, the lock waits of each
 * locked sale (`waits`, read from the shops' metrics), timelines, the concurrent payment calls (`payments`)
 * and `sections` (HTML) after them.
 */
export function renderReportHtml(
  rows: readonly DemoResultRow[],
  meta: Record<string, string>,
  timelines: readonly SaleTimeline[] = [],
  sections: readonly string[] = [],
  waits: readonly WaitDistribution[] = [],
  payments: readonly PaymentTimeline[] = [],
): string {
  const table = `<table><thead><tr>${['strategy', 'database', 'sold', 'oversold', 'final stock', 'conflicts', 'rejected', 'errors', 'sold out s', 'lock busy (sale)', 'lock busy (run)', 'p50 ms', 'p99 ms', 'payments at once', 'invariant']
    .map((h) => `<th>${h}</th>`)
    .join('')}</tr></thead><tbody>${rows
    .map(
      (r) =>
        `<tr class="${r.invariantHolds ? 'ok' : 'bad'}"><td>${escape(r.strategy)}</td><td>${r.database}</td><td>${r.orders}</td><td>${r.oversold}</td><td>${r.finalStock}</td><td>${r.conflicts}</td><td>${r.rejected}</td><td>${r.errors}</td><td>${(r.sellOutMs / 1000).toFixed(2)}</td><td>${r.utilization === null ? '-' : `${Math.round(r.utilization * 100)} %`}</td><td>${r.utilizationWholeRun === null ? '-' : `${Math.round(r.utilizationWholeRun * 100)} %`}</td><td>${r.p50Ms}</td><td>${r.p99Ms}</td><td>${r.paymentPeak} / ${r.paymentPermits}</td><td>${r.invariantHolds ? 'ok' : r.guarded ? 'VIOLATED' : 'broken (expected)'}</td></tr>`,
    )
    .join('')}</tbody></table>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Flash sale report</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 2rem; color: #222; }
table { border-collapse: collapse; margin: 1rem 0 2rem; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
tr.bad td { background: #fde2e2; }
td.ran { background: #dbeafe; text-align: center; }
td.killed { background: #fef3c7; }
figure { margin: 1rem 0 2rem; }
figcaption { font-weight: 600; margin-bottom: .5rem; }
.label, .value, .legend { font-size: 12px; fill: #333; }
</style></head><body>
<h1>Flash sale: ${escape(meta.summary ?? '')}</h1>
<p>${Object.entries(meta)
    .filter(([k]) => k !== 'summary')
    .map(([k, v]) => `<b>${escape(k)}</b>: ${escape(v)}`)
    .join(' · ')}</p>
${table}
${barChart('throughput', 'Orders per second', 'orders/s', rows, [{ label: 'orders/s', value: (r) => r.ordersPerSec, colour: '#3b82f6' }])}
${barChart('latency', 'Purchase latency', 'ms', rows, [
  { label: 'p50', value: (r) => r.p50Ms, colour: '#10b981' },
  { label: 'p99', value: (r) => r.p99Ms, colour: '#f59e0b' },
])}
${barChart('oversold', 'Oversold items', 'items', rows, [{ label: 'oversold', value: (r) => r.oversold, colour: '#ef4444' }])}
${waits.length ? `<h2>How long buyers waited for the lock</h2><p>Read from each shop's <code>GET /metrics</code> (the library's <code>lock.wait.duration</code> histogram, Prometheus text) before and after the sale, summed over the instances; timed-out waits included.</p>${waitCdfSvg(waits)}` : ''}
${timelines.length ? `<h2>Who was inside when</h2><p>One lane per shop instance. Blue: a lock hold (its fencing token in the tooltip). Orange: a section with no lock. Red: a section that overlapped another.</p>${timelines.map(timelineSvg).join('\n')}` : ''}
${payments.length ? `<h2>Concurrent payment calls</h2><p>The checkout's payment step holds a permit of one counting semaphore shared by the instances (<code>@Limited('payments', { permits: ${payments[0].permits} })</code>). Blue: how many payment calls ran at once, from every instance; red dashes: the limit, never crossed.</p>${payments.map(paymentsSvg).join('\n')}` : ''}
${sections.join('\n')}
</body></html>
`;
}
