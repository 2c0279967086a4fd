import type { QueryRunner } from 'typeorm';
import { mysqlConnectionOf, queryDirect, typeOrmObserves, typeOrmQueryError, type MysqlQueryable } from './mysql-direct';

/** TypeORM's transaction bookkeeping on a query runner (`transactionDepth` is protected in its types). */
interface TransactionBookkeeping {
  isTransactionActive: boolean;
  isReleased: boolean;
  transactionDepth?: unknown;
}

/**
 * The runner's mysql2 connection when its transaction statements may skip TypeORM, else undefined.
 * Only where nothing of TypeORM's is skipped: nothing observes its statements (subscribers hear
 * transaction starts and commits, a query log lists START TRANSACTION and COMMIT) and no data-source
 * isolation level (TypeORM sets it before starting). The callers also require the depth TypeORM keeps
 * today (0 before, 1 inside): a TypeORM that keeps it otherwise takes its own path again.
 */
function directConnectionOf(runner: QueryRunner): MysqlQueryable | undefined {
  if (typeOrmObserves(runner.connection) || runner.connection.options.isolationLevel) return undefined;
  return mysqlConnectionOf(runner);
}

/**
 * Starts the lock's transaction on a connected runner, leaving it exactly as TypeORM's
 * `startTransaction()` does: active, depth 1, so writes through the runner's EntityManager run inside it
 * and a nested `manager.transaction()` takes a savepoint.
 *
 * Why not always `startTransaction()`: it and `commitTransaction()` send their statement through the
 * runner's `query()` (mysql2's promise wrapper, which looks its module up and captures a stack on every
 * call, then broadcasts and result copies): twice per lock, a cost the same SQL on a raw mysql2
 * connection does not pay.
 */
export async function beginLockTransaction(runner: QueryRunner): Promise<void> {
  const state = runner as unknown as TransactionBookkeeping;
  const connection = directConnectionOf(runner);
  if (!connection || state.isTransactionActive || state.transactionDepth !== 0) return runner.startTransaction();
  await queryDirect(connection, 'START TRANSACTION', []).catch((error: unknown) => {
    throw typeOrmQueryError('START TRANSACTION', [], error, 'PessimisticLockStrategy');
  });
  state.isTransactionActive = true;
  state.transactionDepth = 1;
}

/** Commits the lock's transaction, leaving the runner as TypeORM's `commitTransaction()` does; see `beginLockTransaction`. */
export async function commitLockTransaction(runner: QueryRunner): Promise<void> {
  const state = runner as unknown as TransactionBookkeeping;
  const connection = directConnectionOf(runner);
  // A savepoint the caller left open (depth above 1) is TypeORM's to unwind, as it always was.
  if (!connection || state.isReleased || !state.isTransactionActive || state.transactionDepth !== 1) return runner.commitTransaction();
  await queryDirect(connection, 'COMMIT', []).catch((error: unknown) => {
    throw typeOrmQueryError('COMMIT', [], error, 'PessimisticLockStrategy');
  });
  state.isTransactionActive = false;
  state.transactionDepth = 0;
}
