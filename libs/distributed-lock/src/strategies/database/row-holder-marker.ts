import { getLockName } from './advisory-key';
import { GRANT_READS_AGAIN, killHolderSession, type PinnedHolderStatements, type RunStatement } from './pinned-lock-inspection';
import type { SqlDialect } from './sql-dialect';

// MySQL/MariaDB's row lock (the pessimistic strategy with `holders: true`). InnoDB names the transaction that
// locks a row only through tables that need the PROCESS privilege, and dates it to the second. So the holder
// marks its hold itself: once its fencing token is written (the fence row names its owner, token and
// connection), its connection takes a GET_LOCK named after the key (the marker), and it lets the marker go
// before its COMMIT or ROLLBACK. Any connection can then ask `IS_USED_LOCK(marker)`, which needs no privilege.
// While a connection holds the marker, the fence row it wrote is the one the table has: a grant on another
// connection needs the row lock, so it comes after the marker was let go.

/** The statement that marks a hold: run on the holder's connection right after its token is written. */
export const MARK_HOLDER = 'DO GET_LOCK(?, 0)';

/** The statement that lets the mark go: run on the holder's connection before its COMMIT or ROLLBACK. */
export const UNMARK_HOLDER = 'DO RELEASE_LOCK(?)';

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
 * read again; one whose row is not found after the reads again is named by its connection alone. Where no
 * connection holds the marker, a look at the row lock tells a free key from a hold without a mark, which
 * is shown without a connection (and cannot be broken): it takes the row's lock for that one statement, so
 * a `tryAcquire` of that instant may be refused.
 */
export function markedRowHolderStatements(d: SqlDialect, rows: string, fences: string, markerOf: (key: string) => string): PinnedHolderStatements {
  // In autocommit, a locking read that skips locked rows takes the row's lock for the statement alone: the
  // row comes back only if nobody holds it.
  const free = `SELECT lock_key FROM ${d.quote(rows)} WHERE lock_key = ? FOR UPDATE SKIP LOCKED`;
  const present = `SELECT 1 AS present FROM ${d.quote(rows)} WHERE lock_key = ?`;
  /** Nobody marked: free, or held by a hold without a mark (inside its grant or its release, or of an instance without `holders: true`). */
  const unmarked = async (run: RunStatement, key: string): Promise<readonly unknown[]> => {
    if ((await run(free, [key])).length === 1 || (await run(present, [key])).length === 0) return [];
    return [{ connection: null, owner: null, token: null, granted_at: null, now_ms: 0 }];
  };
  // One row always: whether the connection still holds the marker, with its fence row where there is one.
  const holderRow = `SELECT IS_USED_LOCK(?) AS still, f.locked_by AS owner, f.fencing_token AS token, ${d.epochMs('f.locked_at')} AS granted_at, ${d.nowMs} AS now_ms
    FROM (SELECT 1 AS one) AS o LEFT JOIN ${d.quote(fences)} AS f ON f.lock_key = ? AND f.locked_by_connection = ?`;
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
    // Still marked by that connection, its row not seen: a holder, named by its connection alone. Let go
    // between the reads: nobody held it throughout.
    return { rows: held ? [{ connection, owner: null, token: null, granted_at: null, now_ms: 0 }] : [], again: false };
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
