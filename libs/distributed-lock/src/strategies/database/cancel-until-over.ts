import { setTimeout as sleep } from 'node:timers/promises';
import type { LockDataSource } from './database-client.type';

/** The pause after a cancel that left the wait going, before the next one: doubled each time, up to the cap. */
const FIRST_PAUSE_MS = 20;
const LONGEST_PAUSE_MS = 1_000;

/**
 * Sends `cancel` (KILL QUERY, pg_cancel_backend) from another connection of `dataSource`, again and again,
 * until the wait it is meant for is over (`over` aborts). Once is not always enough: a cancel that reaches
 * the server before the waiting statement has started there lands on nothing (MySQL and MariaDB forget a
 * KILL QUERY when the connection's next statement starts; PostgreSQL drops a cancel for an idle backend).
 * The statement would then wait out its whole bound, and take the lock when the holder lets go: after the
 * caller that gave up was told so. Another cancel once the wait is running ends it.
 */
export async function cancelUntilOver(dataSource: LockDataSource, cancel: string, over: AbortSignal): Promise<void> {
  for (let pause = FIRST_PAUSE_MS; !over.aborted; pause = Math.min(pause * 2, LONGEST_PAUSE_MS)) {
    await dataSource.query(cancel).catch(() => undefined);
    await sleep(pause, undefined, { signal: over }).catch(() => undefined);
  }
}
