import type { DataSourceOptions, EntityManager } from 'typeorm';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import type { LeaseGrant } from '../../locking/lock-lease';
import { holdersTable } from './advisory-lock.sql';
import type { LockDataSource } from './database-client.type';

/** Options of the advisory-lock strategy (PostgreSQL advisory locks, MySQL/MariaDB `GET_LOCK`). */
export interface AdvisoryLockStrategyOptions {
  /** Your TypeORM DataSource (PostgreSQL, MySQL 8 or MariaDB). Never destroyed by the strategy. */
  readonly dataSource?: LockDataSource;
  /** Or options for a separate pool that the strategy creates and destroys. */
  readonly connection?: DataSourceOptions;
  /** Name in messages and events. Default "advisory". */
  readonly name?: string;
  /**
   * `'session'` (default): the lock belongs to the connection pinned for it (`pg_advisory_lock`,
   * `GET_LOCK`) and the release frees it. `'transaction'`: the pinned connection also runs a transaction
   * for the section (`lockTransaction(lock)` gives its EntityManager); the release commits it (a failed
   * section rolls it back). On PostgreSQL the lock is `pg_advisory_xact_lock`, freed by that COMMIT; on
   * MySQL/MariaDB `GET_LOCK` is taken first and released right after the COMMIT.
   */
  readonly scope?: 'session' | 'transaction';
  /**
   * Where fencing tokens come from: on PostgreSQL a sequence (default "distributed_lock_advisory_tokens"),
   * on MySQL/MariaDB a table with the last token per key (default "distributed_lock_advisory_fences").
   * A plain SQL identifier.
   */
  readonly tokens?: string;
  /**
   * PostgreSQL: write each grant's holder (owner id, backend pid, fencing token, time) into a table, in the
   * grant's own statement, so that `LockService.query` names the holder exactly: `true` for the table
   * "distributed_lock_advisory_holders" (UNLOGGED), or the name of another (a plain SQL identifier). Off
   * by default: the write costs the grant's hand-over (docs/benchmarks.md), and without it a query shows
   * each holder by its connection alone (no owner, no token), which `breakLock` can still end. With
   * `scope: 'transaction'` no row is written: it would commit only with the section. MySQL/MariaDB keep the
   * holder in the fence table (`tokens`): there a table asked for is refused (`false` is accepted).
   */
  readonly holders?: boolean | string;
  /** Create the sequence, the holder table or the fence table if missing on first use. Default true. */
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
   * Send the lock's statements straight to the mysql2 or pg connection under TypeORM (see
   * `typeorm-internals.ts`; on PostgreSQL as named statements, prepared once per connection). `false`:
   * through TypeORM's public API only, slower; for a TypeORM version whose internals this path no longer
   * fits, or a pooler that cannot keep prepared statements. Default true.
   */
  readonly fastPaths?: boolean;
}

/** A grant of the advisory strategy; with `scope: 'transaction'` it carries the lock's EntityManager. */
export interface AdvisoryLeaseGrant extends LeaseGrant {
  /** Only with `scope: 'transaction'`: writes through it commit with the release (see `lockTransaction`). */
  readonly manager?: EntityManager;
}

/** PostgreSQL's `holders` option: the holder table, or undefined where no row is written. */
export function holdersOption(holders: unknown, scope: 'session' | 'transaction', sequence: string): string | undefined {
  const table = holdersTable(holders);
  if (table === undefined) return undefined;
  // A table and a sequence of one schema cannot share a name.
  if (table === sequence) throw new InvalidLockOptionsError('holders', `names the token sequence ("${sequence}", option tokens): give the holder table a name of its own.`);
  // A transaction's row would commit with the section, when it names nobody any more.
  return scope === 'transaction' ? undefined : table;
}

/** MySQL/MariaDB name holders in the fence table: a holder table asked for there is a mistake, said at once. */
export function refuseHolders(holders: unknown): undefined {
  if (holders !== undefined && holders !== false) throw new InvalidLockOptionsError('holders', 'is PostgreSQL only: on MySQL/MariaDB the fence table (`tokens`) names the holder.');
  return undefined;
}
