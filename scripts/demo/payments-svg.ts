import type { Hold } from '../../apps/demo-inventory/src/inventory/hold-log';
import { concurrencySteps, peakConcurrency } from './concurrency';

/** One sale's payment calls, for the chart of how many ran at once. */
export interface PaymentTimeline {
  readonly strategy: string;
  /** When the sale began, in ms since the epoch. */
  readonly startedAt: number;
  readonly durationMs: number;
  /** The payment semaphore's size. */
  readonly permits: number;
  readonly calls: readonly Hold[];
}

const escape = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The concurrent payment calls of a sale over time, as inline SVG: a step line of how many calls were
 * inside at once, from every instance, and a dashed line at the semaphore's size, which it must never cross.
 */
export function paymentsSvg(timeline: PaymentTimeline): string {
  const left = 90;
  const width = 720;
  const plotHeight = 90;
  const top = 24;
  const plot = width - left - 10;
  const span = Math.max(1, timeline.durationMs);
  const peak = peakConcurrency(timeline.calls);
  const scale = Math.max(timeline.permits + 1, peak);
  const x = (at: number): number => left + (plot * Math.min(span, Math.max(0, at - timeline.startedAt))) / span;
  const y = (inside: number): number => top + plotHeight - (plotHeight * inside) / scale;
  let path = `M${left},${y(0)}`;
  for (const step of concurrencySteps(timeline.calls)) path += ` H${x(step.at).toFixed(1)} V${y(step.inside).toFixed(1)}`;
  path += ` H${left + plot}`;
  const limit = `<line class="limit" x1="${left}" x2="${left + plot}" y1="${y(timeline.permits)}" y2="${y(timeline.permits)}" stroke="#ef4444" stroke-dasharray="4 3"/><text x="${left - 8}" y="${y(timeline.permits) + 4}" text-anchor="end" class="label">N = ${timeline.permits}</text>`;
  const axis = `<text x="${left}" y="14" class="legend">0 s</text><text x="${width - 10}" y="14" text-anchor="end" class="legend">${(span / 1000).toFixed(2)} s</text><text x="${left - 8}" y="${y(0) + 4}" text-anchor="end" class="label">0</text>`;
  const height = top + plotHeight + 10;
  const caption = `${timeline.strategy}: ${timeline.calls.length} payment calls, at most ${peak} at once (limit ${timeline.permits})`;
  const over = peak > timeline.permits;
  return `<figure id="payments-${escape(timeline.strategy)}" class="payments" data-peak="${peak}" data-permits="${timeline.permits}"><figcaption>${escape(caption)}${over ? ' — LIMIT CROSSED' : ''}</figcaption><svg class="payments" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="${escape(caption)}">${axis}${limit}<path d="${path}" fill="none" stroke="#3b82f6" stroke-width="1.5"/></svg></figure>`;
}
