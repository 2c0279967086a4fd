/** Metadata key written by `@Locked`. */
export const LOCKED_METADATA = 'distributed-lock:locked';
/** Metadata key written by `@OptimisticVersion`. */
export const OPTIMISTIC_VERSION_METADATA = 'distributed-lock:optimistic-version';
/** The strategy name used when a module registers strategies without naming a default. */
export const DEFAULT_STRATEGY_NAME = 'default';
/** Metadata key written by `@ScheduledLock`. */
export const SCHEDULED_LOCK_METADATA = 'distributed-lock:scheduled-lock';
/** Metadata keys written by `@OnLeadershipGained` / `@OnLeadershipLost`. */
export const LEADERSHIP_GAINED_METADATA = 'distributed-lock:leadership-gained';
export const LEADERSHIP_LOST_METADATA = 'distributed-lock:leadership-lost';
/** Metadata key written by `@Limited`. */
export const LIMITED_METADATA = 'distributed-lock:limited';
