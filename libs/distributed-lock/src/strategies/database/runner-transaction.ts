import type { QueryRunner } from 'typeorm';
import { queryDirect, typeOrmObserves, typeOrmQueryError } from './mysql-direct';
import { queryPg } from './pg-direct';
import { isTransactionFailed, mysqlConnectionOf, pgClientOf, recordTransaction, transactionDepthOf, watchTransactionFailure } from './typeorm-internals';

/** A statement sent straight on the runner's own connection. */
type Send = (sql: string) => Promise<unknown>;

/**
 * How to send the runner's transaction statements straight to its mysql2 or pg connection when they may
 * skip TypeORM, else undefined. Only where `fastPaths` allows it and nothing of TypeORM's is skipped:
 * nothing observes its statements (subscribers hear transaction starts and commits, a query log lists
 * START TRANSACTION and COMMIT) and no data-source isolation level (TypeORM sets it before starting). The
 * callers also require the depth TypeORM keeps today (0 before, 1 inside): a TypeORM that keeps it
 * otherwise takes its own path again.
 */
function directConnectionOf(runner: QueryRunner, fastPaths: boolean): Send | undefined {
  if (!fastPaths || typeOrmObserves(runner.connection) || runner.connection.options.isolationLevel) return undefined;
  const mysql = mysqlConnectionOf(runner);
  if (mysql) return (sql) => queryDirect(mysql, sql, []);
  const pg = pgClientOf(runner);
  return pg ? (sql) => queryPg(pg, sql, []) : undefined;
}

/**
 * Starts the lock's transaction on a connected runner (straight, unless `fastPaths` is false), leaving it
 * exactly as TypeORM's `startTransaction()` does: active, depth 1, so writes through the runner's
 * EntityManager run inside it and a nested `manager.transaction()` takes a savepoint.
 *
 * Why not always `startTransaction()`: it and `commitTransaction()` send their statement through the
 * runner's `query()` (mysql2's promise wrapper, which looks its module up and captures a stack on every
 * call, then broadcasts and result copies): twice per lock, a cost the same SQL on a raw mysql2
 * connection does not pay.
 */
export async function beginLockTransaction(runner: QueryRunner, fastPaths: boolean): Promise<void> {
  const connection = directConnectionOf(runner, fastPaths);
  if (!connection || runner.isTransactionActive || transactionDepthOf(runner) !== 0) return runner.startTransaction();
  await connection('START TRANSACTION').catch((error: unknown) => {
    throw typeOrmQueryError('START TRANSACTION', [], error, 'PessimisticLockStrategy');
  });
  recordTransaction(runner, true);
}

/**
 * Commits the lock's transaction, leaving the runner as TypeORM's `commitTransaction()` does; see
 * `beginLockTransaction`. A transaction PostgreSQL already aborted (a statement of the section failed) is
 * not committed: its COMMIT rolls back without an error, as if the writes were saved. It rejects. pg
 * rejects a failed statement on its error, before the reply that says the transaction failed: a section
 * that ends right after one reaches here before the client knows, so the COMMIT's own answer is read too.
 */
export async function commitLockTransaction(runner: QueryRunner, fastPaths: boolean): Promise<void> {
  if (isTransactionFailed(runner)) throw abortedTransaction();
  const connection = directConnectionOf(runner, fastPaths);
  // A savepoint the caller left open (depth above 1) is TypeORM's to unwind, as it always was.
  if (!connection || runner.isReleased || !runner.isTransactionActive || transactionDepthOf(runner) !== 1) {
    const watch = watchTransactionFailure(runner);
    try {
      await runner.commitTransaction();
    } finally {
      watch.stop();
    }
    if (watch.failed()) throw abortedTransaction();
    return;
  }
  const result = await connection('COMMIT').catch((error: unknown) => {
    throw typeOrmQueryError('COMMIT', [], error, 'PessimisticLockStrategy');
  });
  recordTransaction(runner, false);
  // PostgreSQL answers the COMMIT of an aborted transaction with the command tag ROLLBACK.
  if ((result as { raw?: { command?: unknown } }).raw?.command === 'ROLLBACK') throw abortedTransaction();
}

function abortedTransaction(): Error {
  return new Error('a statement of the section failed, so PostgreSQL aborted the transaction (its writes, and the lock) at that moment');
}
