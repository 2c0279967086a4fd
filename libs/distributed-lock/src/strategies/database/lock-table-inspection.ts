import type { LockInspection } from '../../locking/lock-query';

/** One row of the lease table's `inspect` statement (row-lock.sql.ts); drivers give numbers as numbers or strings. */
interface InspectRow {
  /** 0: the holder; 1: a place in the queue of waiters. */
  readonly kind: number | string;
  readonly owner: string;
  /** The holder's fencing token, or the place's ticket. */
  readonly token: number | string;
  readonly expires_at: number | string;
  /** When the holder was granted, or when the place joined. */
  readonly granted_at: number | string | null;
  readonly now_ms: number | string;
}

/**
 * The lock table's answer to a query, its times moved from the server's clock onto this process's:
 * `localNow` (the middle of the statement's round trip) stands for the server's `now_ms` in the rows.
 * Waiters come in ticket order, the order the queue lets them in.
 */
export function lockTableInspection(records: readonly unknown[], localNow: number): LockInspection {
  const rows = records as readonly InspectRow[];
  const local = (serverMs: number | string, row: InspectRow): number => localNow + (Number(serverMs) - Number(row.now_ms));
  const holders: Array<LockInspection['holders'][number]> = [];
  const places: Array<{ ticket: number; owner: string }> = [];
  for (const row of rows) {
    if (Number(row.kind) === 1) {
      places.push({ ticket: Number(row.token), owner: row.owner });
      continue;
    }
    holders.push({
      owner: row.owner,
      mode: 'exclusive',
      fencingToken: Number(row.token),
      ...(row.granted_at !== null ? { grantedAt: local(row.granted_at, row) } : {}),
      expiresAt: local(row.expires_at, row),
    });
  }
  places.sort((a, b) => a.ticket - b.ticket);
  // A contender leaves its place after its grant, in the background: granted, it no longer waits.
  const waiting = places.filter((place) => !holders.some((holder) => holder.owner === place.owner));
  return { holders, waiters: waiting.map(({ owner }) => ({ owner, mode: 'exclusive' as const })) };
}

/**
 * One look at the lock table for `key` through `run` (a pool, or the connection a break keeps): the
 * `inspect` statement, its server times moved onto this process's clock by the middle of the round trip
 * (off by half of it at most).
 */
export async function lookAtLockTable(run: (statement: string, parameters: unknown[]) => Promise<{ readonly records: readonly unknown[] }>, inspect: string, key: string): Promise<LockInspection> {
  const sentAt = Date.now();
  const looked = await run(inspect, [key, key]);
  return lockTableInspection(looked.records, Math.round((sentAt + Date.now()) / 2));
}
