import type { Backend } from './bench-subject';

/** One strategy at one added round-trip time (bench/distance.ts); latencies are p50, in ms. */
export interface DistanceRow {
  readonly id: string;
  readonly backend: Backend;
  readonly rttMs: number;
  /** One instance alone on the key: from asking to holding. */
  readonly acquireMs: number;
  /** The same, acquire and release. */
  readonly cycleMs: number;
  readonly samples: number;
  /** Two instances on one key: from one's release to the other's grant. */
  readonly handoverMs: number;
  readonly sections: number;
  readonly failures: number;
}

/** Round trips per operation, per strategy: the slopes of its latencies against the RTT. */
export interface DistanceSlopes {
  readonly id: string;
  readonly acquireRoundTrips: number;
  readonly cycleRoundTrips: number;
  readonly handoverRoundTrips: number;
}

/**
 * The least-squares slope of y against x over `points` ([x, y]): ms of latency per ms of RTT, that is
 * round trips. NaN for fewer than two distinct x.
 */
export function slopeOf(points: ReadonlyArray<readonly [number, number]>): number {
  const n = points.length;
  const meanX = points.reduce((sum, [x]) => sum + x, 0) / n;
  const meanY = points.reduce((sum, [, y]) => sum + y, 0) / n;
  const sxx = points.reduce((sum, [x]) => sum + (x - meanX) ** 2, 0);
  if (!(sxx > 0)) return Number.NaN;
  return points.reduce((sum, [x, y]) => sum + (x - meanX) * (y - meanY), 0) / sxx;
}

/** A figure, or "not measured" for a case without samples (NaN here, null once through JSON). */
const shown = (value: number | null): string => (value !== null && Number.isFinite(value) ? String(value) : 'not measured');

export function distanceMarkdown(rows: readonly DistanceRow[], slopes: readonly DistanceSlopes[], meta: Record<string, string>): string {
  const rtts = [...new Set(rows.map((row) => row.rttMs))].sort((a, b) => a - b);
  const cell = (id: string, rtt: number, pick: (row: DistanceRow) => number): string => {
    const row = rows.find((candidate) => candidate.id === id && candidate.rttMs === rtt);
    return row ? shown(pick(row)) : '–';
  };
  const lines = [
    '# Locks across distance: latency against round-trip time',
    '',
    ...Object.entries(meta).map(([name, value]) => `- ${name}: ${value}`),
    '',
    '## Round trips (slope of p50 latency against added RTT)',
    '',
    '| strategy | acquisition | acquire + release | hand-over between instances |',
    '|---|---|---|---|',
    ...slopes.map((slope) => `| ${slope.id} | ${shown(slope.acquireRoundTrips)} | ${shown(slope.cycleRoundTrips)} | ${shown(slope.handoverRoundTrips)} |`),
    '',
    `## Uncontended acquisition, p50 ms, at ${rtts.join(' / ')} ms RTT`,
    '',
    `| strategy | ${rtts.map((rtt) => `${rtt} ms`).join(' | ')} |`,
    `|---|${rtts.map(() => '---').join('|')}|`,
    ...slopes.map((slope) => `| ${slope.id} | ${rtts.map((rtt) => cell(slope.id, rtt, (row) => row.acquireMs)).join(' | ')} |`),
    '',
    `## Hand-over between two instances, p50 ms, at ${rtts.join(' / ')} ms RTT`,
    '',
    `| strategy | ${rtts.map((rtt) => `${rtt} ms`).join(' | ')} |`,
    `|---|${rtts.map(() => '---').join('|')}|`,
    ...slopes.map((slope) => `| ${slope.id} | ${rtts.map((rtt) => cell(slope.id, rtt, (row) => row.handoverMs)).join(' | ')} |`),
    '',
  ];
  return `${lines.join('\n')}\n`;
}

const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2', '#17becf', '#7f7f7f'];

/**
 * Two panels, uncontended acquisition and hand-over between instances: p50 latency against RTT, one line
 * per strategy, a shared legend. Plain SVG, so the docs page shows it without a build step. A strategy with
 * a case that was not measured (no sample: NaN) is left out of the chart, which the report's tables show.
 */
export function distanceChart(allRows: readonly DistanceRow[]): string {
  const unmeasured = new Set(allRows.filter((row) => !Number.isFinite(row.acquireMs) || !Number.isFinite(row.handoverMs)).map((row) => row.id));
  const rows = allRows.filter((row) => !unmeasured.has(row.id));
  const ids = [...new Set(rows.map((row) => row.id))];
  const maxRtt = Math.max(...rows.map((row) => row.rttMs), 1);
  const panel = (title: string, pick: (row: DistanceRow) => number, left: number): string => {
    const width = 380;
    const height = 260;
    const top = 40;
    const maxY = Math.max(1, ...rows.map(pick)) * 1.05;
    const x = (rtt: number): number => left + 50 + (rtt / maxRtt) * (width - 70);
    const y = (ms: number): number => top + height - (ms / maxY) * height;
    const ticksY = [0, 0.25, 0.5, 0.75, 1].map((share) => Math.round(maxY * share));
    const rtts = [...new Set(rows.map((row) => row.rttMs))].sort((a, b) => a - b);
    const lines = ids.map((id, i) => {
      const points = rows
        .filter((row) => row.id === id)
        .sort((a, b) => a.rttMs - b.rttMs)
        .map((row) => `${x(row.rttMs).toFixed(1)},${y(pick(row)).toFixed(1)}`);
      const colour = COLOURS[i % COLOURS.length];
      return `<polyline fill="none" stroke="${colour}" stroke-width="2" points="${points.join(' ')}"/>${points.map((point) => `<circle cx="${point.split(',')[0]}" cy="${point.split(',')[1]}" r="3" fill="${colour}"/>`).join('')}`;
    });
    return [
      `<text x="${left + 50}" y="${top - 15}" font-size="14" font-weight="bold">${title}</text>`,
      `<line x1="${x(0)}" y1="${y(0)}" x2="${x(maxRtt)}" y2="${y(0)}" stroke="#333"/>`,
      `<line x1="${x(0)}" y1="${y(0)}" x2="${x(0)}" y2="${top}" stroke="#333"/>`,
      ...ticksY.map((tick) => `<text x="${x(0) - 6}" y="${y(tick) + 4}" font-size="11" text-anchor="end">${tick}</text><line x1="${x(0)}" y1="${y(tick)}" x2="${x(maxRtt)}" y2="${y(tick)}" stroke="#eee"/>`),
      ...rtts.map((rtt) => `<text x="${x(rtt)}" y="${y(0) + 16}" font-size="11" text-anchor="middle">${rtt}</text>`),
      `<text x="${x(maxRtt / 2)}" y="${y(0) + 34}" font-size="12" text-anchor="middle">added round-trip time (ms)</text>`,
      `<text x="${left + 12}" y="${top + height / 2}" font-size="12" text-anchor="middle" transform="rotate(-90 ${left + 12} ${top + height / 2})">p50 latency (ms)</text>`,
      ...lines,
    ].join('\n');
  };
  const legend = ids.map((id, i) => `<rect x="${20 + (i % 5) * 150}" y="${352 + Math.floor(i / 5) * 18}" width="12" height="12" fill="${COLOURS[i % COLOURS.length]}"/><text x="${36 + (i % 5) * 150}" y="${362 + Math.floor(i / 5) * 18}" font-size="12">${id}</text>`);
  return [
    '<svg xmlns="http://www.w3.org/2000/svg" width="800" height="400" viewBox="0 0 800 400" font-family="sans-serif">',
    '<rect width="800" height="400" fill="white"/>',
    panel('Uncontended acquisition', (row) => row.acquireMs, 0),
    panel('Hand-over between two instances', (row) => row.handoverMs, 400),
    ...legend,
    '</svg>',
    '',
  ].join('\n');
}
