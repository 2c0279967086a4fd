import type { LockInspection } from '../../locking/lock-query';
import type { LockDataSource } from './database-client.type';
import { lookAtLockTable } from './lock-table-inspection';
import { queryOnRunner, type DirectResult } from './mysql-direct';

type Holder = LockInspection['holders'][number];

/**
 * Ends the holds of `key` in the lock table as an operator's `breakLock` does: one look at the row
 * (`inspect`), then `breakHold` for each holder it found, which frees the row only while that holder and its
 * token are still the row's, so a holder that came after the look is not broken. One connection for the look
 * and the change, taken first, and `signal` checked right before each statement: once the caller was told the
 * break failed (its bound ran out), nothing more is sent. Returns the holders it ended.
 */
export async function breakLockTableHolds(
  dataSource: LockDataSource,
  fastPaths: boolean,
  sql: { readonly inspect: string; readonly breakHold: string },
  key: string,
  signal: AbortSignal | undefined,
): Promise<Holder[]> {
  const runner = dataSource.createQueryRunner();
  try {
    await runner.connect();
    const run = (statement: string, parameters: unknown[]): Promise<DirectResult> => {
      if (signal?.aborted) throw signal.reason;
      return queryOnRunner(runner, statement, parameters, fastPaths);
    };
    const { holders } = await lookAtLockTable(run, sql.inspect, key);
    const broken: Holder[] = [];
    for (const holder of holders) {
      if ((await run(sql.breakHold, [key, holder.owner, holder.fencingToken])).affected === 1) broken.push(holder);
    }
    return broken;
  } finally {
    await runner.release();
  }
}
