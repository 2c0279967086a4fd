import type { QueryRunner } from 'typeorm';
import { isConnectionClosed } from './typeorm-internals';

// What the strategies that pin a connection per held lock (pessimistic, advisory) share about it.

/** The driver refused to send the statement: the connection was already closed (mysql2, pg), or TypeORM had released it after its error. */
export function isNotSent(error: unknown): boolean {
  const e = error as { name?: unknown; message?: unknown };
  return /closed state|not queryable|Client was closed/.test(String(e?.message ?? '')) || e?.name === 'QueryRunnerAlreadyReleasedError';
}

/** The connection failed (dropped, reset, killed) rather than the server refusing the statement. */
export function isConnectionError(error: unknown): boolean {
  const e = error as { fatal?: unknown; code?: unknown; message?: unknown; driverError?: { fatal?: unknown; code?: unknown; message?: unknown } };
  const fatal = e?.driverError?.fatal ?? e?.fatal;
  const code = String(e?.driverError?.code ?? e?.code ?? '');
  const message = String(e?.driverError?.message ?? e?.message ?? '');
  // PostgreSQL: the backend was terminated (57P01–57P03), or pg saw the socket close under the statement.
  return fatal === true || /^(PROTOCOL_CONNECTION_LOST|ECONNRESET|EPIPE|ETIMEDOUT|ER_CONNECTION_KILLED|57P0[123])$/.test(code) || /Connection terminated/.test(message);
}

/**
 * Whether a statement's failure, or the runner's state, says that the runner's connection has ended (a
 * killed session, a dropped connection): a lock that lived on it went with it.
 */
export function endedUnder(runner: QueryRunner, error: unknown): boolean {
  return isNotSent(error) || isConnectionError(error) || isConnectionClosed(runner);
}

/** Rolls back the runner's transaction if one is open, and gives its connection back; never throws. */
export async function rollbackAndRelease(runner: QueryRunner): Promise<void> {
  try {
    if (runner.isTransactionActive) await runner.rollbackTransaction();
  } catch {
    // The connection may be gone (which also ends the transaction on the server).
  }
  await runner.release().catch(() => undefined);
}
