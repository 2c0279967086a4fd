/**
 * One hold of a lock as its holder saw it, times from CLOCK_MONOTONIC (`process.hrtime.bigint()`, in ns),
 * which every process on the machine shares, so holds recorded by separate processes compare directly.
 */
export interface HoldRecord {
  readonly kind: 'hold';
  readonly key: string;
  /** The acquisition's owner id (unique per acquisition). */
  readonly owner: string;
  /** Which process or client recorded it, for the report. */
  readonly holder: string;
  readonly token?: number;
  /** When the holder started to act as the holder (its section began). */
  readonly from: string;
  /** When it stopped (its section ended); absent when the process died holding it. */
  readonly until?: string;
  /** When its holder was told the lock was lost (the signal aborted), if it was. */
  readonly lostAt?: string;
  readonly lostReason?: string;
  /** How the section ended for the caller: resolved, or the error's name. */
  readonly outcome?: string;
  /** A permit's places (1 when absent). */
  readonly weight?: number;
  /**
   * How much of its lease the holder knew it had left as the section began (ms, `expiresAt` − now). At or
   * below 0, its process stalled between the lock service's check of the grant and the section's first line.
   */
  readonly leaseLeftMs?: number;
}

/**
 * What happened to a holder's process (`holder` as in its holds), recorded by the test that did it:
 * `paused` from the moment it was seen stopped (SIGSTOP, see stopProcess) to SIGCONT, `killed` once it had
 * died of SIGKILL.
 */
export type ProcessRecord =
  | { readonly kind: 'paused'; readonly holder: string; readonly from: string; readonly until: string }
  | { readonly kind: 'killed'; readonly holder: string; readonly at: string };

/** A write a fenced resource accepted, numbered in the order it accepted them. */
export interface WriteRecord {
  readonly kind: 'write';
  readonly key: string;
  readonly token: number;
  /** Position in the resource's own acceptance order. */
  readonly seq: number;
}

export type HistoryRecord = HoldRecord | WriteRecord | ProcessRecord;

/** What the checker found wrong; `detail` says which holds or writes. */
export interface Anomaly {
  readonly rule: 'overlap' | 'token-order' | 'stale-write' | 'unreported-loss' | 'over-capacity';
  readonly key: string;
  readonly detail: string;
}

/** A monotonic timestamp in ns, as a decimal string (JSON has no bigint). */
export function monotonicNow(): string {
  return process.hrtime.bigint().toString();
}
