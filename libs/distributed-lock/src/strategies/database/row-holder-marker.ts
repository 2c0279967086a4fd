import type { QueryRunner } from 'typeorm';
import { getLockName } from './advisory-key';
import { queryOnRunner } from './mysql-direct';
import { fenceRowOfConnection, GRANT_READS_AGAIN, killHolderSession, type PinnedHolderStatements, type RunStatement } from './pinned-lock-inspection';
import type { SqlDialect } from './sql-dialect';

// MySQL/MariaDB's row lock (the pessimistic strategy with `holders: true`). InnoDB names the transaction that
// locks a row only through tables that need the PROCESS privilege, and dates it to the second. So the holder
// marks its hold itself: once its fencing token is written (the fence row names its owner, token and
// connection), its connection takes a GET_LOCK named after the key (the marker), and it lets the marker go
// before its COMMIT or ROLLBACK. Any connection can then ask `IS_USED_LOCK(marker)`, which needs no privilege.
// While a connection holds the marker, the fence row it wrote is the one the table has: a grant on another
// connection needs the row lock, so it comes after the marker was let go.

/**
 * The statement that marks a hold: run on the holder's connection right after its token is written, with
 * the marker's name twice. A session ended under its hold (a break, a lost lease, close()) gives its row
 * lock back before its named locks, so the next holder may find the mark still there for a moment: it
 * waits for it, up to a second. Already its own (never, unless a mark leaked): not taken twice, as GET_LOCK
 * would count it. Not taken within the second: the hold goes unmarked, which `query` shows as such.
 */
const MARK_HOLDER = 'DO IF(IS_USED_LOCK(?) <=> CONNECTION_ID(), 1, GET_LOCK(?, 1))';

/** Marks a hold with `marker` on the lock's connection, right after its token is written. */
export async function markHold(runner: QueryRunner, marker: string, fastPaths: boolean): Promise<void> {
  await queryOnRunner(runner, MARK_HOLDER, [marker, marker], fastPaths);
}

/**
 * Lets the mark go, on the lock's connection before its COMMIT or ROLLBACK: resolves the statement's error
 * where it failed (the caller then ends the session, so that no pooled connection keeps a mark).
 */
export function unmarkHold(runner: QueryRunner, marker: string, fastPaths: boolean): Promise<unknown> {
  return queryOnRunner(runner, 'DO RELEASE_LOCK(?)', [marker], fastPaths).then(
    () => undefined,
    (error: unknown) => error ?? new Error('RELEASE_LOCK failed'),
  );
}

/**
 * The marker's GET_LOCK name for `key` in row table `table`: always hashed (the name holds a NUL, which no
 * key named after itself does), so it is never the GET_LOCK name of a key of the advisory strategy, and two
 * tables never share a marker.
 */
export function rowHolderMarker(table: string, key: string): string {
  return getLockName(`\u0000row holder\u0000${table}\u0000${key}`);
}

/**
 * Reads the holder in two statements. First, which connection holds the marker. Then, in a later snapshot,
 * the fence row that connection wrote, and whether it still holds the marker. The marker is taken after the
 * fence row is committed, so the second snapshot has that row, or the row of a later grant of the same
 * connection: either way a hold that was there during the query. A connection that let go in between is
 * read again. Where no connection holds the marker, or one whose row is not found after the reads again
 * (a mark outliving its hold), a look at the row lock tells a free key from a hold without a mark, which
 * is shown without a connection (and cannot be broken): it takes the row's lock for that one statement, so
 * a `tryAcquire` of that instant may be refused.
 */
export function markedRowHolderStatements(d: SqlDialect, rows: string, fences: string, markerOf: (key: string) => string): PinnedHolderStatements {
  // In autocommit, a locking read that skips locked rows takes the row's lock for the statement alone: the
  // row comes back only if nobody holds it.
  const free = `SELECT lock_key FROM ${d.quote(rows)} WHERE lock_key = ? FOR UPDATE SKIP LOCKED`;
  const present = `SELECT 1 AS present FROM ${d.quote(rows)} WHERE lock_key = ?`;
  /**
   * Nobody marked: free, or held by a hold without a mark (inside its grant or its release, or of an
   * instance without `holders: true`). Best effort: another query's look at the same instant also skips
   * the row, and shows a free key as held.
   */
  const unmarked = async (run: RunStatement, key: string): Promise<readonly unknown[]> => {
    if ((await run(present, [key])).length === 0 || (await run(free, [key])).length === 1) return [];
    return [{ connection: null, owner: null, token: null, granted_at: null, now_ms: 0 }];
  };
  // Whether the connection still holds the marker, with its fence row where there is one.
  const holderRow = fenceRowOfConnection(d, fences);
  type Read = { rows: readonly unknown[]; again: boolean };
  const readOnce = async (run: RunStatement, key: string, lastTry: boolean): Promise<Read> => {
    const marker = markerOf(key);
    const [first] = (await run('SELECT IS_USED_LOCK(?) AS connection', [marker])) as ReadonlyArray<{ connection: number | string | null }>;
    if (first?.connection === null || first?.connection === undefined) return { rows: await unmarked(run, key), again: false };
    const connection = Number(first.connection);
    const [row] = (await run(holderRow, [marker, key, connection])) as ReadonlyArray<{ still: number | string | null; owner: string | null }>;
    const held = row !== undefined && row.still !== null && Number(row.still) === connection;
    if (held && row.owner !== null) return { rows: [{ ...row, connection }], again: false };
    if (!lastTry) return { rows: [], again: true };
    // Still marked by a connection that wrote no row of this key: not a holder's mark (a session ending
    // under its hold lets the mark go last), so the row lock itself is asked, and that connection never
    // named. Let go between the reads: nobody held it throughout.
    return { rows: held ? await unmarked(run, key) : [], again: false };
  };
  return {
    async readHolder(run, key) {
      let read = await readOnce(run, key, false);
      for (let again = 0; read.again; again += 1) {
        await new Promise((resolve) => setTimeout(resolve, again));
        read = await readOnce(run, key, again + 1 >= GRANT_READS_AGAIN);
      }
      return read.rows;
    },
    ...killHolderSession,
  };
}
