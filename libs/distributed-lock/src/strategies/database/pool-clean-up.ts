import type { LockDataSource } from './database-client.type';

/** Clean-up under way on each DataSource's pool: session ends, connections that came after their caller left. */
const underWay = new WeakMap<LockDataSource, number>();

/**
 * Counts one piece of this library's clean-up that uses a connection of `dataSource`'s pool (ending a
 * wait's session, a connection on its way back because its caller left) until the returned function is
 * called (idempotent).
 */
export function cleanUpStarted(dataSource: LockDataSource): () => void {
  underWay.set(dataSource, (underWay.get(dataSource) ?? 0) + 1);
  let ended = false;
  return () => {
    if (ended) return;
    ended = true;
    underWay.set(dataSource, (underWay.get(dataSource) ?? 1) - 1);
  };
}

/**
 * True while this library's own clean-up uses `dataSource`'s pool: a pool found full then is (in part) full
 * of that, which lasts milliseconds, not of the application's queries and held locks alone. Short waits
 * that abandon their connections one after the other (a storm of 1 ms waits) fill a pool that way.
 */
export function cleaningUp(dataSource: LockDataSource): boolean {
  return (underWay.get(dataSource) ?? 0) > 0;
}
