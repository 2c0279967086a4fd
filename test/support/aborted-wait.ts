import type { DataSource } from 'typeorm';
import { LockAcquireAbortedError, LockManager, LockService, type LockStrategy } from '@app/distributed-lock';
import { watchStatements } from './watched-statements';

/** Long enough for the cancel sent on abort to reach the server and be answered before the wait does. */
const HOLD_MS = 300;

/**
 * The caller aborts its acquisition just as the statement that waits for the lock leaves, and that statement
 * reaches the server after the cancel the abort sent (held back on its way, as on a slow link): the cancel
 * lands on nothing. The promise under test: acquire() rejects with LockAcquireAbortedError only once the
 * wait has ended on the server, without the lock, so the holder's release right after frees the key.
 * `strategy` runs on `waiterDataSource`, a data source of the test's own (it keeps the hold until destroyed);
 * `holder` takes the lock through another one.
 */
export async function expectAbortedWaitEnded(options: {
  readonly holder: LockService;
  readonly strategy: LockStrategy;
  readonly waiterDataSource: DataSource;
  readonly waitingStatement: RegExp;
  readonly key: string;
}): Promise<void> {
  const { holder, strategy, waiterDataSource, waitingStatement, key } = options;
  // Short, so that without the fix the rejection comes (after this bound) while the wait is still on.
  const waiter = new LockManager(strategy, { operationTimeout: 2_000 });
  try {
    const held = await holder.acquire(key, { ttl: 30_000 });
    const controller = new AbortController();
    const waits = watchStatements(waiterDataSource, {
      matches: (sql) => waitingStatement.test(sql),
      holdMs: HOLD_MS,
      onIssued: () => controller.abort(new Error('cancelled by the caller')),
    });
    const cancels = watchStatements(waiterDataSource, { matches: (sql) => /^(KILL QUERY|SELECT pg_cancel_backend)\b/.test(sql) });
    const outcome = await new LockService(waiter).acquire(key, { ttl: 30_000, waitTimeout: 20_000, signal: controller.signal }).then(
      async (handle) => {
        await handle.release();
        return handle;
      },
      (error: unknown) => error,
    );
    expect(outcome).toBeInstanceOf(LockAcquireAbortedError);
    // The race under test took place: the first cancel was answered before the wait left for the server.
    expect(waits).toHaveLength(1);
    expect(cancels[0]?.settledAt).toBeLessThan(waits[0]?.sentAt ?? 0);
    // The wait had ended on the server when the caller was told (without the lock: the holder still has it).
    expect(waits[0]?.settledAt).toBeDefined();
    await held.release();
    const next = await holder.tryAcquire(key, { ttl: 30_000 });
    expect(next).not.toBeNull();
    await next?.release();
  } finally {
    await waiter.close();
  }
}
