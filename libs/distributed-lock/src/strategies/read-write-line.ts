import type { LockMode } from '../locking/lock-lease';

/**
 * How many contenders at the head of a read-write line (in the order the backend serves it) hold the lock,
 * as the etcd and ZooKeeper recipes grant it: a writer first holds alone; otherwise the readers before the
 * first writer hold together.
 */
export function holdersAhead(modes: readonly LockMode[]): number {
  if (modes[0] === 'exclusive') return 1;
  const firstWriter = modes.indexOf('exclusive');
  return firstWriter === -1 ? modes.length : firstWriter;
}
