import { DistributedLockError } from './distributed-lock.error';

/** Why a leader stopped leading. */
export type LeadershipLostReason =
  /** The lock that carried the leadership was lost (lease ran out, session ended, key removed): see `cause`. */
  | 'lock-lost'
  /** `resign()` gave the leadership up. */
  | 'resigned'
  /** The election was closed (application shutdown). */
  | 'closed'
  /** Not a loss: the signal of a process that does not lead (yet), read outside any term. */
  | 'not-leader';

const WHY: Record<LeadershipLostReason, string> = {
  'lock-lost': 'the lock that carried it was lost',
  resigned: 'it resigned',
  closed: 'the election was closed',
  'not-leader': 'this process does not lead',
};

/**
 * This process no longer leads. The `reason` of a leadership signal once it aborts, and the `error` of the
 * `lost` event.
 */
export class LeadershipLostError extends DistributedLockError {
  constructor(
    /** The election's name. */
    readonly election: string,
    /** The term that ended (the lock's fencing token), undefined on strategies without fencing. */
    readonly term: number | undefined,
    readonly reason: LeadershipLostReason,
    options?: { cause?: unknown },
  ) {
    super(
      `Leadership of "${election}"${term === undefined ? '' : ` (term ${term})`} ended: ${WHY[reason]} (${reason}). ` +
        'Stop leader-only work now; writes guarded by the term as a fencing token are refused once a newer leader wrote.',
      options,
    );
  }
}
