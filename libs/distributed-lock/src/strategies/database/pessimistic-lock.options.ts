import type { DataSourceOptions } from 'typeorm';
import type { LockDataSource } from './database-client.type';

/** Options of the pessimistic (`SELECT … FOR UPDATE`) strategy. */
export interface PessimisticLockStrategyOptions {
  /** Your TypeORM DataSource (MySQL 8, MariaDB 10.6+ or PostgreSQL 12+). Never destroyed by the strategy. */
  readonly dataSource?: LockDataSource;
  /** Or options for a separate pool that the strategy creates and destroys. */
  readonly connection?: DataSourceOptions;
  /** Name in messages and events. Default "pessimistic". */
  readonly name?: string;
  /**
   * Row-lock table. Default "distributed_lock_rows", whose fencing table is "distributed_lock_fences"; another
   * table's is its name + "_fences", and for a name over 55 characters its first 47 + "_" + 8 hex digits of
   * its SHA-256 (of the name as given) + "_fences" (two tables never share one). A name whose fencing table
   * would be the default table's ("distributed_lock") is refused.
   */
  readonly table?: string;
  /** Create the table if missing on first use. Default true. */
  readonly ensureTable?: boolean;
  /**
   * How many connections held (and waiting) locks may pin at once. Further acquisitions wait for a free
   * slot without touching the pool, and fail with an error naming this option if none frees within their
   * wait; `tryAcquire` resolves null. It must be below the pool size (cancels, fencing tokens and your
   * queries need a connection that is not pinned): a value that is not throws `InvalidLockOptionsError`
   * at construction. Default 8, lowered to the pool size − 1 on a smaller pool.
   */
  readonly maxHeldConnections?: number;
  /**
   * Send the lock's statements and its transaction's START TRANSACTION and COMMIT straight to the mysql2
   * or pg connection under TypeORM (found in TypeORM's internals, see `typeorm-internals.ts`; on
   * PostgreSQL as named statements), as TypeORM would send them. `false`: through TypeORM's public API only
   * (query runner, `startTransaction`, `commitTransaction`), slower; for a TypeORM version whose internals
   * these paths no longer fit, or a pooler that cannot keep prepared statements. Default true.
   */
  readonly fastPaths?: boolean;
  /**
   * MySQL/MariaDB: let `query` and `breakLock` name the holder. Each hold marks itself with a GET_LOCK named
   * after the key, taken once its fencing token is written and let go before its COMMIT or ROLLBACK: two
   * statements more per section on the lock's connection (docs/operations.md gives the measured cost).
   * Without it, `query` and `breakLock` are refused there: InnoDB names a row's locker only to a user with
   * the PROCESS privilege. PostgreSQL names the holder either way (its row locks say which transaction holds
   * them), and accepts both values. Default false.
   */
  readonly holders?: boolean;
}

/** Every option the strategy knows: any other key is refused. */
export const PESSIMISTIC_OPTION_KEYS = ['dataSource', 'connection', 'name', 'table', 'ensureTable', 'maxHeldConnections', 'fastPaths', 'holders'];
