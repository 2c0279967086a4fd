/** One term of leadership as its process reported it, times from CLOCK_MONOTONIC in ns (decimal strings). */
export interface TermRecord {
  readonly election: string;
  readonly process: string;
  readonly term: number | undefined;
  /** When the process was told it leads (`gained`). */
  readonly from: string;
  /** When it was told it no longer leads (`lost`); absent when it died leading. */
  readonly until?: string;
}

/** A process frozen with SIGSTOP from `stoppedAt` to `resumedAt` (SIGCONT). */
export interface FreezeRecord {
  readonly process: string;
  readonly stoppedAt: string;
  readonly resumedAt: string;
}

/** A process killed with SIGKILL at `at`. */
export interface DeathRecord {
  readonly process: string;
  readonly at: string;
}

export interface LeadershipAnomaly {
  readonly rule: 'two-leaders' | 'term-order';
  readonly election: string;
  readonly detail: string;
}

const ns = BigInt;
const describe = (t: TermRecord): string => `${t.process} term ${t.term ?? '-'} [${t.from}..${t.until ?? 'died'}]`;

/**
 * Checks what the leader election promises: per election, no two processes lead at once, except a process
 * frozen (SIGSTOP) past its lease that another replaced meanwhile; that one must be told within `boundMs`
 * of waking (its overlap with the new leader is then only the freeze, when it can do nothing, and that
 * bound). A process that died leading leads until its death. Terms strictly increase in the order terms
 * began (on strategies with fencing).
 */
export function checkLeadership(
  terms: readonly TermRecord[],
  events: { readonly freezes: readonly FreezeRecord[]; readonly deaths: readonly DeathRecord[] },
  boundMs: number,
): LeadershipAnomaly[] {
  const anomalies: LeadershipAnomaly[] = [];
  const byElection = new Map<string, TermRecord[]>();
  for (const term of terms) byElection.set(term.election, [...(byElection.get(term.election) ?? []), term]);
  const deathOf = (process: string): bigint | undefined => {
    const death = events.deaths.find((d) => d.process === process);
    return death ? ns(death.at) : undefined;
  };
  for (const [election, list] of byElection) {
    const ordered = [...list].sort((a, b) => (ns(a.from) < ns(b.from) ? -1 : ns(a.from) > ns(b.from) ? 1 : 0));
    for (let i = 0; i < ordered.length; i += 1) {
      const earlier = ordered[i];
      const end = earlier.until === undefined ? deathOf(earlier.process) : ns(earlier.until);
      for (const later of ordered.slice(i + 1)) {
        if (later.process === earlier.process) continue;
        const start = ns(later.from);
        if (end !== undefined && start >= end) continue;
        const freeze = events.freezes.find((f) => f.process === earlier.process && ns(f.stoppedAt) <= start && start <= ns(f.resumedAt));
        const toldInBound = freeze !== undefined && end !== undefined && end - ns(freeze.resumedAt) <= BigInt(boundMs) * 1_000_000n;
        if (!toldInBound) anomalies.push({ rule: 'two-leaders', election, detail: `${describe(earlier)} overlaps ${describe(later)}` });
      }
      const next = ordered[i + 1];
      if (next && earlier.term !== undefined && next.term !== undefined && !(next.term > earlier.term)) {
        anomalies.push({ rule: 'term-order', election, detail: `${describe(next)} began after ${describe(earlier)} with a term not above it` });
      }
    }
  }
  return anomalies;
}

/** The fenced write a process makes as soon as it gains a term, as it reported it. Times as in `TermRecord`. */
export interface LeaderWriteRecord {
  readonly election: string;
  readonly process: string;
  readonly term: number;
  readonly accepted: boolean;
  /** When it was sent, and when its answer came back. */
  readonly sentAt: string;
  readonly answeredAt: string;
}

/**
 * The refused writes of new leaders that nothing explains. A write refused by the fencing check had a
 * term at or below one written before: fine only if a higher term began in another process before the
 * answer came (the writer was frozen, or lost its term, between gaining it and its write reaching the
 * resource; `checkLeadership` judges that overlap). Anything else (a term handed out twice, terms out of
 * order) is returned.
 */
export function unexplainedRefusals(terms: readonly TermRecord[], writes: readonly LeaderWriteRecord[]): LeaderWriteRecord[] {
  return writes.filter(
    (write) =>
      !write.accepted &&
      !terms.some((t) => t.election === write.election && t.process !== write.process && t.term !== undefined && t.term > write.term && ns(t.from) < ns(write.answeredAt)),
  );
}
