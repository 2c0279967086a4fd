import type { LockInfo, LockOwnerInfo } from '../locking/lock-query';

/** Who leads an election and who stands next, as the backend says now (`LeaderElection.query`). */
export interface LeadershipInfo {
  /** The election's name. */
  readonly election: string;
  /** The leader, or null while nobody leads (between two terms, or nobody campaigns). */
  readonly leader: {
    readonly owner: LockOwnerInfo;
    /** Its term: the fencing token of its lock; null on a strategy without fencing. */
    readonly term: number | null;
    /** When its term began (ms since the epoch, this process's clock); null where the backend keeps no grant time. */
    readonly since: number | null;
    /** When its lease ends unless renewed; null where the backend says not. */
    readonly leaseEndsAt: number | null;
  } | null;
  /**
   * The candidates waiting in the backend's line, in the order it will choose them; null where the backend
   * keeps no line (candidates poll, and the first to ask after the leader leaves leads).
   */
  readonly candidates: readonly LockOwnerInfo[] | null;
}

/** The leadership an election's lock shows: its one holder leads, its waiters are the candidates. */
export function leadershipOf(election: string, lock: LockInfo): LeadershipInfo {
  const holder = lock.held[0];
  return {
    election,
    leader: holder ? { owner: holder.owner, term: holder.fencingToken, since: holder.grantedAt, leaseEndsAt: holder.expiresAt } : null,
    candidates: lock.pending?.map((waiter) => waiter.owner) ?? null,
  };
}
