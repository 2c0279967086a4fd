/** A stretch of time, in ms since the epoch. */
export interface Span {
  readonly startedAt: number;
  readonly endedAt: number;
}

/** How many spans are running from `at` on (until the next step). */
export interface ConcurrencyStep {
  readonly at: number;
  readonly inside: number;
}

/**
 * How many of `spans` run at once over time, as steps. A span that ends when another starts does not
 * overlap it: at equal times the end is counted first.
 */
export function concurrencySteps(spans: readonly Span[]): ConcurrencyStep[] {
  const events = spans.flatMap((span) => [
    { at: span.startedAt, delta: 1 },
    { at: span.endedAt, delta: -1 },
  ]);
  events.sort((a, b) => a.at - b.at || a.delta - b.delta);
  const steps: ConcurrencyStep[] = [];
  let inside = 0;
  for (const event of events) {
    inside += event.delta;
    const last = steps[steps.length - 1];
    if (last && last.at === event.at) steps[steps.length - 1] = { at: event.at, inside };
    else steps.push({ at: event.at, inside });
  }
  return steps;
}

/** The most spans running at once. */
export function peakConcurrency(spans: readonly Span[]): number {
  return concurrencySteps(spans).reduce((peak, step) => Math.max(peak, step.inside), 0);
}
