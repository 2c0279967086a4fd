import type { Anomaly, HistoryRecord, HoldRecord, WriteRecord } from './hold-history';

/** What a checked history held, and what was wrong with it. */
export interface CheckResult {
  readonly holds: number;
  readonly writes: number;
  readonly keys: number;
  readonly anomalies: readonly Anomaly[];
}

const ns = (value: string): bigint => BigInt(value);

function describeHold(hold: HoldRecord): string {
  return `${hold.holder}/${hold.owner.slice(0, 8)} token ${hold.token ?? '-'} [${hold.from}..${hold.until ?? 'died'}]${hold.lostAt ? ` lost ${hold.lostReason} at ${hold.lostAt}` : ''}`;
}

/**
 * Checks a history of exclusive holds and fenced writes against what the library promises:
 * - no two holds of one key overlap, unless the earlier one had been reported lost to its holder before
 *   the later one began (a holder told in time is allowed to be overtaken: that is what the signal is for);
 * - fencing tokens strictly increase in the order holds began;
 * - every write a fenced resource accepted carries a token above every write it accepted before;
 * - a hold whose section ended with the lock no longer held was told so (`lostAt`), never silently.
 * A hold without `until` belongs to a process that died holding it: it lasts until its lease let the next in,
 * so it is never counted as overlapping its successor unless the successor began before it was recorded.
 */
export function checkHistory(records: readonly HistoryRecord[]): CheckResult {
  const holds = records.filter((record): record is HoldRecord => record.kind === 'hold');
  const writes = records.filter((record): record is WriteRecord => record.kind === 'write');
  const anomalies: Anomaly[] = [];
  const byKey = new Map<string, HoldRecord[]>();
  for (const hold of holds) byKey.set(hold.key, [...(byKey.get(hold.key) ?? []), hold]);

  for (const [key, list] of byKey) {
    const ordered = [...list].sort((a, b) => (ns(a.from) < ns(b.from) ? -1 : ns(a.from) > ns(b.from) ? 1 : 0));
    for (let i = 0; i < ordered.length; i += 1) {
      const earlier = ordered[i];
      const end = earlier.until === undefined ? undefined : ns(earlier.until);
      for (let j = i + 1; j < ordered.length; j += 1) {
        const later = ordered[j];
        const start = ns(later.from);
        if (end !== undefined && start >= end) break; // sorted by start: no later hold overlaps `earlier`
        if (end === undefined) continue; // died holding it: its end is the lease, not recorded
        const toldInTime = earlier.lostAt !== undefined && ns(earlier.lostAt) <= start;
        if (!toldInTime) anomalies.push({ rule: 'overlap', key, detail: `${describeHold(earlier)} overlaps ${describeHold(later)}` });
      }
      const next = ordered[i + 1];
      if (next && earlier.token !== undefined && next.token !== undefined && !(next.token > earlier.token)) {
        anomalies.push({ rule: 'token-order', key, detail: `${describeHold(next)} began after ${describeHold(earlier)} with a token not above it` });
      }
      if (earlier.outcome === 'LockLostError' && earlier.lostAt === undefined) {
        anomalies.push({ rule: 'unreported-loss', key, detail: `${describeHold(earlier)} ended lost but its signal never aborted` });
      }
    }
  }

  const writesByKey = new Map<string, WriteRecord[]>();
  for (const write of writes) writesByKey.set(write.key, [...(writesByKey.get(write.key) ?? []), write]);
  for (const [key, list] of writesByKey) {
    const ordered = [...list].sort((a, b) => a.seq - b.seq);
    for (let i = 1; i < ordered.length; i += 1) {
      if (!(ordered[i].token > ordered[i - 1].token)) {
        anomalies.push({ rule: 'stale-write', key, detail: `write #${ordered[i].seq} with token ${ordered[i].token} accepted after token ${ordered[i - 1].token}` });
      }
    }
  }
  return { holds: holds.length, writes: writes.length, keys: byKey.size, anomalies };
}
