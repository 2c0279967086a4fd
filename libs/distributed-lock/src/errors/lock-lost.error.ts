import { DistributedLockError } from './distributed-lock.error';

/** Why a held lock stopped being ours, which also says how the loss was found. */
export type LockLostReason =
  /** The lease ran out before it was extended. */
  | 'expired'
  /** An extension was refused: the key was deleted or taken over behind the holder's back. */
  | 'extension-refused'
  /** The backend could not be reached long enough for the lease to run out. */
  | 'backend-unreachable'
  /** The backend session or lease that carried the lock ended (ZooKeeper session, etcd lease, database connection). */
  | 'session-ended'
  /** The backend reported the lock's key removed. */
  | 'removed'
  /** The release found the lock no longer held: deleted, expired or taken over while the section ran. */
  | 'not-held-at-release'
  /** The lock service was closed (application shutdown) while the lock was held: it was given back. */
  | 'closed'
  /** An operator broke the lock (`LockService.breakLock`), and the backend told the holder so. */
  | 'broken';

const HOW_FOUND: Record<LockLostReason, string> = {
  expired: 'its lease ran out before it was extended',
  'extension-refused': 'an extension found it deleted or taken over',
  'backend-unreachable': 'the backend could not be reached until its lease ran out',
  'session-ended': 'the backend session, lease or connection that carried it ended',
  removed: 'the backend reported its key removed',
  'not-held-at-release': 'the release found it no longer held (deleted, expired or taken over while the section ran)',
  closed: 'the lock service was closed (application shutdown) while it was held, and gave it back',
  broken: 'an operator broke it (LockService.breakLock)',
};

/**
 * The lock is no longer held by this owner. Delivered as the `reason` of the handle's `signal`, through
 * the `lost` event, and thrown by `withLock` / `@Locked` when the section ends after the loss (also when
 * only the release found out).
 */
export class LockLostError extends DistributedLockError {
  /**
   * Set when the section ran to its end before the loss was reported (its function resolved; the loss was
   * noticed during it, or only by the release): `value` is what it returned, which `withLock`, `withPermit`,
   * `@Locked`, `@Limited` and `@ScheduledLock` discard by throwing this error. Its writes may overlap another
   * holder's. Keep the value only when each of its writes was checked against a newer holder's, as a fenced
   * write (`fencedUpdate`) is, and landed: for example the order a fenced stock deduction committed, which the
   * buyer should hear about. Absent when the section threw (its error is the `cause`).
   */
  readonly sectionResult?: { readonly value: unknown };

  constructor(
    readonly key: string,
    readonly strategy: string,
    readonly reason: LockLostReason,
    options?: { cause?: unknown; sectionResult?: { readonly value: unknown } },
  ) {
    super(
      `Lock "${key}" (strategy "${strategy}") was lost: ${HOW_FOUND[reason]} (${reason}). Work done since may overlap with ` +
        'another holder: check `signal.aborted` before writing, and guard writes with the fencing token.',
      options,
    );
    if (options?.sectionResult) this.sectionResult = options.sectionResult;
  }

  /** This loss, as the end of a section that completed with `value` (a new error: the handle's own stays as it was). */
  withSectionResult(value: unknown): LockLostError {
    return new LockLostError(this.key, this.strategy, this.reason, { ...(this.cause === undefined ? {} : { cause: this.cause }), sectionResult: { value } });
  }

  /** @internal This loss, as the end of a section that threw `error` (its cause: the section most likely failed of the loss). */
  withSectionFailure(error: unknown): LockLostError {
    return new LockLostError(this.key, this.strategy, this.reason, { cause: error });
  }
}
