import type { ShopInstance } from './instances';

/**
 * How long a sale's buyers waited for its lock, as the shops' `GET /metrics` report it: the
 * `lock.wait.duration` histogram of the library's telemetry (Prometheus name `lock_wait_duration`), summed
 * over the instances and over outcomes (a wait that timed out is a wait too). Cumulative, as Prometheus
 * gives it: `counts[i]` waits took at most `bounds[i]` seconds.
 */
export interface WaitDistribution {
  readonly strategy: string;
  /** Upper bounds of the buckets, in seconds, ascending; the last is Infinity. */
  readonly bounds: readonly number[];
  readonly counts: readonly number[];
  /** Every wait (the +Inf bucket). */
  readonly total: number;
}

const BUCKET_LINE = /^lock_wait_duration_bucket\{(.*)\}\s+(\S+)\s*$/;
const LABEL = /(\w+)="((?:[^"\\]|\\.)*)"/g;

/** The `lock_wait_duration` buckets of one scrape for the lock strategies named, by upper bound, summed over the other labels. */
export function waitBuckets(prometheusText: string, lockStrategies: readonly string[]): Map<number, number> {
  const buckets = new Map<number, number>();
  for (const line of prometheusText.split('\n')) {
    const match = BUCKET_LINE.exec(line);
    if (!match) continue;
    const labels = new Map([...match[1].matchAll(LABEL)].map((label) => [label[1], label[2]] as const));
    if (!lockStrategies.includes(labels.get('lock_strategy') ?? '')) continue;
    const le = labels.get('le');
    if (le === undefined) continue;
    const bound = le === '+Inf' ? Infinity : Number(le);
    buckets.set(bound, (buckets.get(bound) ?? 0) + Number(match[2]));
  }
  return buckets;
}

/** Bucket by bucket, `after` minus `before`: what happened between two scrapes. */
export function bucketsBetween(before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>): Map<number, number> {
  return new Map([...after].map(([bound, count]) => [bound, count - (before.get(bound) ?? 0)]));
}

/** The shops' buckets (`waitBuckets`) summed. */
export async function scrapeWaitBuckets(instances: readonly ShopInstance[], lockStrategies: readonly string[]): Promise<Map<number, number>> {
  const sum = new Map<number, number>();
  for (const instance of instances) {
    const response = await fetch(`http://127.0.0.1:${instance.port}/metrics`);
    if (!response.ok) throw new Error(`${instance.name}: GET /metrics answered ${response.status}`);
    for (const [bound, count] of waitBuckets(await response.text(), lockStrategies)) sum.set(bound, (sum.get(bound) ?? 0) + count);
  }
  return sum;
}

/** Buckets as a distribution; undefined when there is no wait in them. */
export function waitDistribution(strategy: string, buckets: ReadonlyMap<number, number>): WaitDistribution | undefined {
  const bounds = [...buckets.keys()].sort((a, b) => a - b);
  const total = buckets.get(Infinity) ?? 0;
  if (total <= 0) return undefined;
  return { strategy, bounds, counts: bounds.map((bound) => buckets.get(bound) ?? 0), total };
}
