import type { WaitDistribution } from './lock-wait-metrics';

const escape = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const COLOURS = ['#3b82f6', '#10b981', '#f59e0b', '#8b5cf6', '#ef4444', '#14b8a6', '#64748b', '#ec4899', '#84cc16', '#0ea5e9', '#a16207', '#111827'];
/** Past the colours (a run of every strategy has more sales than that), the lines repeat them dashed. */
const DASHES = ['', '6 3', '2 3'];
/** About the width of one character of the 12 px legend text, to size the legend's column. */
const LEGEND_CHAR_PX = 7;

function formatSeconds(seconds: number): string {
  if (seconds >= 1) return `${seconds} s`;
  return `${Number((seconds * 1000).toPrecision(3))} ms`;
}

/**
 * The lock waits of each sale as a cumulative distribution, inline SVG: x the wait (log scale, at the
 * histogram's bucket bounds), y the share of waits that took at most that long; one line per strategy,
 * one point per bucket bound (its figures in the tooltip).
 */
export function waitCdfSvg(distributions: readonly WaitDistribution[]): string {
  const bounds = [...new Set(distributions.flatMap((d) => d.bounds.filter(Number.isFinite)))].sort((a, b) => a - b);
  if (bounds.length < 2) return '';
  const left = 50;
  const top = 30;
  const plotWidth = 570;
  const legendLabel = (d: WaitDistribution): string => `${d.strategy} (${d.total})`;
  const legendWidth = 30 + LEGEND_CHAR_PX * Math.max(...distributions.map((d) => legendLabel(d).length));
  const width = left + plotWidth + 16 + legendWidth;
  const plotHeight = 220;
  const logMin = Math.log10(bounds[0]);
  const logSpan = Math.log10(bounds[bounds.length - 1]) - logMin;
  const x = (bound: number): number => left + (plotWidth * (Math.log10(bound) - logMin)) / logSpan;
  const y = (share: number): number => top + plotHeight * (1 - share);
  const grid = [0, 0.5, 0.9, 1]
    .map((share) => `<line x1="${left}" x2="${left + plotWidth}" y1="${y(share)}" y2="${y(share)}" stroke="#ddd"/><text x="${left - 6}" y="${y(share) + 4}" text-anchor="end" class="legend">${share * 100} %</text>`)
    .join('');
  const ticks = bounds
    .filter((_, i) => i % 3 === 0 || i === bounds.length - 1)
    .map((bound) => `<text x="${x(bound)}" y="${top + plotHeight + 16}" text-anchor="middle" class="legend">${formatSeconds(bound)}</text>`)
    .join('');
  const lines = distributions
    .map((d, i) => {
      const colour = COLOURS[i % COLOURS.length];
      const dash = DASHES[Math.floor(i / COLOURS.length) % DASHES.length];
      const dashAttribute = dash ? ` stroke-dasharray="${dash}"` : '';
      const points = d.bounds.map((bound, j) => ({ bound, count: d.counts[j] })).filter((p) => Number.isFinite(p.bound));
      const path = points.map((p) => `${x(p.bound).toFixed(1)},${y(p.count / d.total).toFixed(1)}`).join(' ');
      const dots = points
        .map((p) => `<circle class="wait-point" cx="${x(p.bound).toFixed(1)}" cy="${y(p.count / d.total).toFixed(1)}" r="2.5" fill="${colour}"><title>${escape(`${d.strategy}: ${p.count} of ${d.total} waits ≤ ${formatSeconds(p.bound)} (${Math.round((100 * p.count) / d.total)} %)`)}</title></circle>`)
        .join('');
      const legend = `<line x1="${left + plotWidth + 14}" x2="${left + plotWidth + 28}" y1="${top + i * 18 + 5}" y2="${top + i * 18 + 5}" stroke="${colour}" stroke-width="3"${dashAttribute}/><text x="${left + plotWidth + 32}" y="${top + i * 18 + 9}" class="legend">${escape(legendLabel(d))}</text>`;
      return `<g class="wait-cdf" data-strategy="${escape(d.strategy)}"><polyline points="${path}" fill="none" stroke="${colour}" stroke-width="2"${dashAttribute}/>${dots}${legend}</g>`;
    })
    .join('');
  const height = Math.max(top + plotHeight + 26, top + distributions.length * 18 + 10);
  const title = 'Lock wait during the sale: share of waits that took at most x (from GET /metrics, lock_wait_duration)';
  return `<figure id="lock-waits"><figcaption>${escape(title)}</figcaption><svg class="wait-chart" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="${escape(title)}">${grid}${ticks}${lines}</svg></figure>`;
}
