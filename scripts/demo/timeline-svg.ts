import type { Hold } from '../../apps/demo-inventory/src/inventory/hold-log';

/** One sale's critical sections, for its timeline. */
export interface SaleTimeline {
  readonly strategy: string;
  /** When the sale began, in ms since the epoch. */
  readonly startedAt: number;
  readonly durationMs: number;
  readonly holds: readonly Hold[];
}

const escape = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The holds that began before an earlier one (in start order) had ended: two buyers inside at once. */
export function overlapping(holds: readonly Hold[]): Set<Hold> {
  const ordered = [...holds].sort((a, b) => a.startedAt - b.startedAt);
  const overlaps = new Set<Hold>();
  let latest: Hold | undefined;
  for (const hold of ordered) {
    if (latest && hold.startedAt < latest.endedAt) {
      overlaps.add(hold);
      overlaps.add(latest);
    }
    if (!latest || hold.endedAt > latest.endedAt) latest = hold;
  }
  return overlaps;
}

/**
 * Who was inside when, as inline SVG: one lane per shop instance, one bar per lock hold (its fencing token
 * in the tooltip) or, where no lock is taken, per section. Bars that overlap another are red.
 */
export function timelineSvg(timeline: SaleTimeline): string {
  const lanes = [...new Set(timeline.holds.map((hold) => hold.instance))].sort();
  const left = 90;
  const width = 720;
  const laneHeight = 22;
  const plot = width - left - 10;
  const span = Math.max(1, timeline.durationMs);
  const overlaps = overlapping(timeline.holds);
  const x = (at: number): number => left + (plot * Math.max(0, at - timeline.startedAt)) / span;
  const bars = timeline.holds
    .map((hold) => {
      const lane = lanes.indexOf(hold.instance);
      const overlap = overlaps.has(hold);
      const x0 = x(hold.startedAt);
      const w = Math.max(0.5, x(hold.endedAt) - x0);
      const tip = `${hold.instance}: ${(hold.endedAt - hold.startedAt).toFixed(2)} ms from ${(hold.startedAt - timeline.startedAt).toFixed(1)} ms${hold.fencingToken !== null ? `, fencing token ${hold.fencingToken}` : ''}${overlap ? ', overlaps another' : ''}`;
      return `<rect class="hold${overlap ? ' overlap' : ''}" data-kind="${hold.kind}" x="${x0.toFixed(1)}" y="${24 + lane * laneHeight}" width="${w.toFixed(1)}" height="16" fill="${overlap ? '#ef4444' : hold.kind === 'lock' ? '#3b82f6' : '#f59e0b'}"><title>${escape(tip)}</title></rect>`;
    })
    .join('');
  const labels = lanes.map((lane, i) => `<text x="${left - 8}" y="${37 + i * laneHeight}" text-anchor="end" class="label">${escape(lane)}</text>`).join('');
  const axis = `<text x="${left}" y="14" class="legend">0 s</text><text x="${width - 10}" y="14" text-anchor="end" class="legend">${(span / 1000).toFixed(2)} s</text>`;
  const height = 34 + lanes.length * laneHeight;
  const caption = `${timeline.strategy}: ${timeline.holds.length} sections, ${overlaps.size} overlapping`;
  return `<figure id="timeline-${escape(timeline.strategy)}" class="timeline"><figcaption>${escape(caption)}</figcaption><svg class="timeline" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="${escape(caption)}">${axis}${labels}${bars}</svg></figure>`;
}
