import { DistributedLockError } from './distributed-lock.error';

/**
 * A table an SQL strategy needs does not exist: made by hand (`ensureTable: false`) and one was left out, as
 * the lock table's queue of waiters when upgrading, or dropped since. Retrying does not help; create the table
 * with the statements docs/migration.md gives (or the `*Ddl` helpers), or leave `ensureTable` on so that the
 * strategy makes it on first use. The server's own answer is the `cause`.
 */
export class LockTableMissingError extends DistributedLockError {
  constructor(
    readonly strategy: string,
    /** What was being done: "acquire", "release", "extend". */
    readonly operation: string,
    /** The table as the strategy names it (unquoted). */
    readonly table: string,
    options?: { cause?: unknown; key?: string },
  ) {
    super(
      `Strategy "${strategy}" could not ${operation}${options?.key ? ` "${options.key}"` : ''}: table "${table}" does not exist. Create it as docs/migration.md shows, or leave the strategy's \`ensureTable\` on so that it makes the table on first use.`,
      options,
    );
    this.key = options?.key;
  }
  /** The lock key involved, when there was one. */
  readonly key: string | undefined;
}
