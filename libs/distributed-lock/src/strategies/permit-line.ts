import type { SemaphoreInspection } from '../locking/lock-query';

/** One contender of a semaphore's line, as a query read it. */
export interface PermitContender {
  readonly owner: string;
  readonly weight: number;
  readonly fencingToken: number;
}

/**
 * Who holds places of a semaphore of `permits` and who waits, from its line of contenders in the order the
 * backend serves it, as the etcd and ZooKeeper recipes grant: a contender holds when its weight and the
 * weights of everyone ahead of it fit in `permits`, so the holders are the head of the line and the first
 * that does not fit waits with everyone behind it, however light.
 */
export function permitLineInspection(permits: number | undefined, line: readonly PermitContender[]): SemaphoreInspection {
  if (permits === undefined) return { holders: [], waiters: [] };
  let used = 0;
  let holding = 0;
  while (holding < line.length && used + line[holding].weight <= permits) {
    used += line[holding].weight;
    holding += 1;
  }
  return {
    permits,
    holders: line.slice(0, holding).map(({ owner, weight, fencingToken }) => ({ owner, weight, fencingToken })),
    waiters: line.slice(holding).map(({ owner, weight }) => ({ owner, weight })),
  };
}
