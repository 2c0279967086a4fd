import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Lock, LockHandle, LockLostError } from '@app/distributed-lock';
import { monotonicNow, type HistoryRecord, type HoldRecord, type ProcessRecord, type WriteRecord } from './hold-history';

/** The start of a hold, written as soon as the section begins, so that a holder killed inside it leaves it. */
interface HoldStart extends Omit<HoldRecord, 'until' | 'lostAt' | 'lostReason' | 'outcome'> {
  readonly kind: 'hold';
}

/** How a hold went on and ended, written by the holder once known (matched to its start by owner). */
interface HoldNews {
  readonly kind: 'hold-end' | 'hold-lost' | 'hold-outcome';
  readonly owner: string;
  readonly at: string;
  readonly reason?: string;
  readonly outcome?: string;
}

type Line = HoldStart | HoldNews | WriteRecord | ProcessRecord;

/**
 * A history of holds and fenced writes, appended one JSON line at a time to a file that any number of
 * processes share (each line is a single append, so lines never interleave).
 */
export class HistoryLog {
  constructor(readonly file: string) {
    mkdirSync(dirname(file), { recursive: true });
    if (!existsSync(file)) writeFileSync(file, '');
  }

  private append(line: Line): void {
    appendFileSync(this.file, `${JSON.stringify(line)}\n`);
  }

  /**
   * Records the hold `lock` gives `holder` from now: its start at once, its loss when its signal aborts.
   * `sectionEnded()` marks the last line of the section (before the release), `outcome()` how the call
   * ended for the caller once known (resolved, or the error's name: a loss may only be found at the release).
   */
  begin(holder: string, lock: Lock): { sectionEnded(): void; outcome(outcome: string): void } {
    const handle = lock as LockHandle;
    const owner = handle.owner ?? `${holder}-${monotonicNow()}`;
    const from = monotonicNow();
    const leaseLeftMs = typeof handle.expiresAt === 'number' ? handle.expiresAt - Date.now() : undefined;
    const weight = (lock as { weight?: unknown }).weight;
    this.append({ kind: 'hold', key: lock.keys[0], owner, holder, token: lock.fencingToken, from, leaseLeftMs, ...(typeof weight === 'number' ? { weight } : {}) });
    const onAbort = (): void => this.append({ kind: 'hold-lost', owner, at: monotonicNow(), reason: (lock.signal.reason as LockLostError | undefined)?.reason });
    if (lock.signal.aborted) onAbort();
    else lock.signal.addEventListener('abort', onAbort, { once: true });
    let ended = false;
    return {
      sectionEnded: () => {
        if (ended) return;
        ended = true;
        this.append({ kind: 'hold-end', owner, at: monotonicNow() });
      },
      outcome: (outcome) => this.append({ kind: 'hold-outcome', owner, at: monotonicNow(), outcome }),
    };
  }

  /** A write the fenced resource accepted, `seq` in its own acceptance order. */
  write(key: string, token: number, seq: number): void {
    this.append({ kind: 'write', key, token, seq });
  }

  /** `holder`'s process was frozen (SIGSTOP) from `from` to `until` (SIGCONT), both `monotonicNow()`. */
  paused(holder: string, from: string, until: string): void {
    this.append({ kind: 'paused', holder, from, until });
  }

  /** `holder`'s process died of SIGKILL by `at` (`monotonicNow()`). */
  killed(holder: string, at: string): void {
    this.append({ kind: 'killed', holder, at });
  }

  /** The history so far, with each hold's start, loss and end put together. */
  read(): HistoryRecord[] {
    const lines = readFileSync(this.file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((text) => JSON.parse(text) as Line);
    const holds = new Map<string, { -readonly [K in keyof HoldRecord]: HoldRecord[K] }>();
    const records: HistoryRecord[] = [];
    for (const line of lines) {
      if (line.kind === 'hold') {
        const hold = { ...line };
        holds.set(line.owner, hold);
        records.push(hold);
      } else if (line.kind === 'write' || line.kind === 'paused' || line.kind === 'killed') {
        records.push(line);
      }
    }
    for (const line of lines) {
      if (line.kind !== 'hold-lost' && line.kind !== 'hold-end' && line.kind !== 'hold-outcome') continue;
      const hold = holds.get(line.owner);
      if (!hold) continue;
      if (line.kind === 'hold-lost' && hold.lostAt === undefined) {
        hold.lostAt = line.at;
        hold.lostReason = line.reason;
      }
      if (line.kind === 'hold-end') hold.until = line.at;
      if (line.kind === 'hold-outcome') hold.outcome = line.outcome;
    }
    return records;
  }
}
