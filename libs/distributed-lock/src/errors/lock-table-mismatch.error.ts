import { DistributedLockError } from './distributed-lock.error';

/**
 * A table an SQL strategy uses exists, but lacks a column the strategy's statements name: made by another
 * program or an earlier version under the same name, or altered since. Retrying does not help; migrate the
 * table as docs/migration.md shows (the `*Ddl` helpers give its columns), or give the strategy a table of its
 * own (its `table`, `tokens` or `holders` option). The server's own answer is the `cause`.
 */
export class LockTableMismatchError extends DistributedLockError {
  constructor(
    readonly strategy: string,
    /** What was being done: "acquire", "release", "query"… */
    readonly operation: string,
    /** The column the server did not find, as its answer names it. */
    readonly column: string,
    /** The table, where the server's answer names it; otherwise the strategy's tables the statement may use. */
    readonly tables: readonly string[],
    options?: { cause?: unknown; key?: string },
  ) {
    super(
      `Strategy "${strategy}" could not ${operation}${options?.key ? ` "${options.key}"` : ''}: ${tables.length === 1 ? `table "${tables[0]}"` : tables.length === 0 ? 'a table it reads' : `one of its tables (${tables.map((t) => `"${t}"`).join(', ')})`} has no column "${column}". It was made by another program or an earlier version: migrate it as docs/migration.md shows, or give the strategy a table of its own.`,
      options,
    );
    this.key = options?.key;
  }
  /** The lock key involved, when there was one. */
  readonly key: string | undefined;
}
