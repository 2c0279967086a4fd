import { DistributedLockError } from './distributed-lock.error';

/** Why a held lock stopped being ours. */
export type LockLostReason =
  /** The lease ran out before it was extended. */
  | 'expired'
  /** An extension was refused: the key was deleted or taken over behind the holder's back. */
  | 'extension-refused'
  /** The backend could not be reached long enough for the lease to run out. */
  | 'backend-unreachable'
  /** The backend session or lease that carried the lock ended (ZooKeeper session, etcd lease). */
  | 'session-ended'
  /** The backend reported the lock's key removed. */
  | 'removed';

/**
 * The lock is no longer held by this owner. Delivered as the `reason` of the handle's `signal`, through
 * the `lost` event, and thrown by `withLock` / `@Locked` when the section ends after the loss.
 */
export class LockLostError extends DistributedLockError {
  constructor(
    readonly key: string,
    readonly strategy: string,
    readonly reason: LockLostReason,
    options?: { cause?: unknown },
  ) {
    super(
      `Lock "${key}" (strategy "${strategy}") was lost (${reason}). Work done since may overlap with another holder: ` +
        'check `signal.aborted` before writing, and guard writes with the fencing token.',
      options,
    );
  }
}
