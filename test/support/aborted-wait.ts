import type { DataSource } from 'typeorm';
import { LockAcquireAbortedError, LockManager, LockService, type LockStrategy } from '@app/distributed-lock';
import { watchStatements, type WatchedStatement } from './watched-statements';

/** A held-back statement is let go once the first cancel was answered, and at most this long after. */
const LONGEST_HOLD_MS = 5_000;

const CANCEL = /^(KILL CONNECTION|SELECT pg_terminate_backend)\b/;

/**
 * The race between an abort and a statement on its way: the caller's `signal` aborts the moment a statement
 * matching `statement` is issued on `dataSource`, and that statement is held back until the cancel the abort
 * sent was answered (as on a slow link), so that cancel lands on nothing. `end()` lets go of the hold.
 */
function abortWhenIssued(dataSource: DataSource, statement: RegExp): { signal: AbortSignal; held: WatchedStatement[]; cancels: WatchedStatement[]; end(): void } {
  const controller = new AbortController();
  let cancelAnswered = (): void => undefined;
  let longestHold: NodeJS.Timeout | undefined;
  const firstCancel = new Promise<void>((resolve) => {
    cancelAnswered = resolve;
    longestHold = setTimeout(resolve, LONGEST_HOLD_MS);
  });
  const held = watchStatements(dataSource, { matches: (sql) => statement.test(sql), hold: () => firstCancel, onIssued: () => controller.abort(new Error('cancelled by the caller')) });
  const cancels = watchStatements(dataSource, { matches: (sql) => CANCEL.test(sql), onSettled: () => cancelAnswered() });
  return { signal: controller.signal, held, cancels, end: () => clearTimeout(longestHold) };
}

/**
 * The caller aborts its acquisition just as the statement that waits for the lock leaves, and that statement
 * reaches the server after the cancel the abort sent was answered (held back on its way, as on a slow link):
 * that cancel lands on nothing. The promise under test: acquire() rejects with LockAcquireAbortedError only
 * once the wait has ended on the server, without the lock, so the holder's release right after frees the key.
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
  const held = await holder.acquire(key, { ttl: 30_000 });
  const race = abortWhenIssued(waiterDataSource, waitingStatement);
  try {
    const outcome = await new LockService(waiter).acquire(key, { ttl: 30_000, waitTimeout: 20_000, signal: race.signal }).then(
      async (handle) => {
        await handle.release();
        return handle;
      },
      (error: unknown) => error,
    );
    expect(outcome).toBeInstanceOf(LockAcquireAbortedError);
    // The race under test took place: the first cancel was answered before the wait left for the server.
    expect(race.held).toHaveLength(1);
    expect(race.cancels[0]?.settledAt).toBeLessThanOrEqual(race.held[0]?.sentAt ?? 0);
    // The wait had ended on the server when the caller was told (without the lock: the holder still has it).
    expect(race.held[0]?.settledAt).toBeDefined();
    await held.release();
    const next = await holder.tryAcquire(key, { ttl: 30_000 });
    expect(next).not.toBeNull();
    await next?.release();
  } finally {
    race.end();
    // Also when a check above failed: the holder's lock must not outlive the test.
    await held.release().catch(() => undefined);
    await waiter.close();
  }
}

/**
 * The caller aborts while `heldStatement`, sent before the wait, is on its way (held back until the
 * abort's cancel was answered, so the cancel lands on nothing): no statement matching `waitingStatement`
 * may be sent after that, since nothing would be left to cut it. `holder`, when given, holds the key
 * meanwhile (through another data source), so that the wait would be a real one.
 */
export async function expectNoWaitSentAfterAbort(options: {
  readonly holder?: LockService;
  readonly strategy: LockStrategy;
  readonly waiterDataSource: DataSource;
  readonly heldStatement: RegExp;
  readonly waitingStatement: RegExp;
  readonly key: string;
}): Promise<void> {
  const { holder, strategy, waiterDataSource, heldStatement, waitingStatement, key } = options;
  const waiter = new LockManager(strategy, { operationTimeout: 2_000 });
  const held = await holder?.acquire(key, { ttl: 30_000 });
  const race = abortWhenIssued(waiterDataSource, heldStatement);
  const waits = watchStatements(waiterDataSource, { matches: (sql) => waitingStatement.test(sql) });
  try {
    const outcome = await new LockService(waiter).acquire(key, { ttl: 30_000, waitTimeout: 20_000, signal: race.signal }).catch((error: unknown) => error);
    expect(outcome).toBeInstanceOf(LockAcquireAbortedError);
    expect(race.held).toHaveLength(1);
    expect(waits.map(({ sql }) => sql)).toEqual([]);
  } finally {
    race.end();
    await held?.release().catch(() => undefined);
    await waiter.close();
  }
}
