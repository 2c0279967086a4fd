import type { Anomaly, HistoryRecord, HoldRecord, ProcessRecord } from './hold-history';

/** What a checked history of permits held, and what was wrong with it. */
export interface PermitCheckResult {
  readonly holds: number;
  readonly keys: number;
  /** The most places in use at once (a key's, the highest of all keys). */
  readonly peakInUse: number;
  /** Holds excused while their process was frozen or before it knew its lease had run out (see `checkPermits`). */
  readonly excused: number;
  readonly anomalies: readonly Anomaly[];
}

type Paused = Extract<ProcessRecord, { kind: 'paused' }>;

const ns = (value: string): bigint => BigInt(value);
const min = (a: bigint, b: bigint): bigint => (a < b ? a : b);

function describeHold(hold: HoldRecord): string {
  return `${hold.holder}/${hold.owner.slice(0, 8)} token ${hold.token ?? '-'} [${hold.from}..${hold.until ?? 'died'}]${hold.lostAt ? ` lost ${hold.lostReason} at ${hold.lostAt}` : ''}`;
}

/**
 * When `hold` stops counting as a place in use, or undefined when it is not counted at all: its section's
 * end, or the moment its holder was told the permit was lost if that came first, or its process's death.
 * A hold whose holder was told of the loss is counted only until the first freeze of its process that it
 * lasted through: the lease runs out while a process is frozen, and the woken holder is told (that it is
 * told is what the library promises: it cannot be told while frozen). For the same reason a hold that began
 * on a lease its holder's clock already saw ended (`leaseLeftMs` ≤ 0: its process stalled between the lock
 * service's check of the grant and the section's first line) and that was told of the loss is not counted.
 * A hold never told of a loss counts for its whole length, freezes included: the server kept its place.
 */
function countedUntil(hold: HoldRecord, pauses: readonly Paused[], killedAt: bigint | undefined): { end: bigint; excused: boolean } | undefined {
  const from = ns(hold.from);
  let end = hold.until !== undefined ? ns(hold.until) : killedAt !== undefined && killedAt >= from ? killedAt : undefined;
  if (end === undefined) return undefined; // the process ended some other way holding it: its end is unknown
  if (hold.lostAt === undefined) return { end, excused: false };
  end = min(end, ns(hold.lostAt));
  if (hold.leaseLeftMs !== undefined && hold.leaseLeftMs <= 0) return { end: from, excused: true };
  const told = end;
  for (const pause of pauses) {
    const frozenAt = ns(pause.from);
    if (frozenAt > from && frozenAt < end) end = frozenAt;
  }
  return { end, excused: end < told };
}

/**
 * Checks a history of permit holds (a counting semaphore of `permits` places) against what the library
 * promises: at no moment are more than `permits` places in use, as the holders saw their holds (from the
 * first line of a section to its last, or to the moment the holder was told the permit was lost; see
 * `countedUntil` for frozen and killed processes); a section that ended lost was told so.
 */
export function checkPermits(records: readonly HistoryRecord[], permits: number): PermitCheckResult {
  const holds = records.filter((record): record is HoldRecord => record.kind === 'hold');
  const pausesOf = new Map<string, Paused[]>();
  const killedAt = new Map<string, bigint>();
  for (const record of records) {
    if (record.kind === 'paused') pausesOf.set(record.holder, [...(pausesOf.get(record.holder) ?? []), record]);
    if (record.kind === 'killed') killedAt.set(record.holder, ns(record.at));
  }
  const anomalies: Anomaly[] = [];
  const byKey = new Map<string, HoldRecord[]>();
  for (const hold of holds) byKey.set(hold.key, [...(byKey.get(hold.key) ?? []), hold]);
  let peakInUse = 0;
  let excused = 0;

  for (const [key, list] of byKey) {
    // Ends before starts at the same instant: a place handed on is not in use twice.
    const events: Array<{ at: bigint; delta: number; hold: HoldRecord }> = [];
    for (const hold of list) {
      if (hold.outcome === 'LockLostError' && hold.lostAt === undefined) {
        anomalies.push({ rule: 'unreported-loss', key, detail: `${describeHold(hold)} ended lost but its signal never aborted` });
      }
      const counted = countedUntil(hold, pausesOf.get(hold.holder) ?? [], killedAt.get(hold.holder));
      if (!counted) continue;
      if (counted.excused) excused += 1;
      if (counted.end <= ns(hold.from)) continue;
      events.push({ at: ns(hold.from), delta: hold.weight ?? 1, hold }, { at: counted.end, delta: -(hold.weight ?? 1), hold });
    }
    events.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.delta - b.delta));
    const inUse = new Set<HoldRecord>();
    let count = 0;
    let over = false;
    for (const event of events) {
      count += event.delta;
      if (event.delta > 0) inUse.add(event.hold);
      else inUse.delete(event.hold);
      peakInUse = Math.max(peakInUse, count);
      // One anomaly per stretch above the size, naming the holds in use when it began.
      if (count > permits && !over) {
        anomalies.push({ rule: 'over-capacity', key, detail: `${count} places in use of ${permits} at ${event.at}: ${[...inUse].map(describeHold).join('; ')}` });
      }
      over = count > permits;
    }
  }
  return { holds: holds.length, keys: byKey.size, peakInUse, excused, anomalies };
}
