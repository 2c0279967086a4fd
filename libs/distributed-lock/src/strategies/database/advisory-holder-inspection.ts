import type { PinnedHolderStatements } from './pinned-lock-inspection';
import type { SqlDialect } from './sql-dialect';

/** How many times a query reads a holder again that it caught inside a statement (after 0, 1, 2… ms). */
const READS_AGAIN = 5;

/** One row of the first read: the backend that holds the key, and what it was doing right after. */
interface LockerRow {
  readonly connection: number | string;
  /** `pg_stat_activity.state`: null for a backend of another role (without `pg_read_all_stats`). */
  readonly state: string | null;
}

/**
 * PostgreSQL's advisory locks (the advisory strategy). `pg_locks` names the backend (pid) that holds the
 * key's lock; the holder table, written by the grant's own statement, names its owner and token. That
 * statement takes the lock before its row commits, so for a moment a backend holds the lock anew while the
 * key's row is still an earlier grant's. Hence two reads:
 * 1. `pg_locks`, then that backend's state, read after it in the same statement (the lock list is taken
 *    whole before the outer query asks for the state). `idle`: no statement of that backend is running,
 *    so the grant of the hold just seen has committed.
 * 2. In a later snapshot, the row of (key, pid), written after the backend started (a pid the system
 *    reused is another backend): a grant of this backend that held during the query.
 * A backend caught running a statement (its grant, or the lock service's check of the connection) is read
 * again; one that stays busy, one of another role, one in a transaction (`scope: 'transaction'`, whose row
 * would commit only with the section) and one with no row (another program, an earlier version of this
 * library, `holders: false`) is shown by its connection alone.
 *
 * `holders`: the holder table, or undefined where none is written (then every holder is shown by its
 * connection). `advisoryKeyOf`: the key's advisory key (`postgresAdvisoryKey`).
 */
export function advisoryHolderStatements(d: SqlDialect, holders: string | undefined, advisoryKeyOf: (key: string) => string): PinnedHolderStatements {
  // An int8 advisory key is the lock tag's two 32-bit halves (classid high, objid low, objsubid 1), in this
  // database only: advisory locks of other databases are other locks.
  const heldBy = `FROM pg_locks AS l WHERE l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND l.classid = $1::bigint::oid AND l.objid = $2::bigint::oid AND l.objsubid = 1 AND l.granted`;
  const locker = `SELECT h.pid AS connection, a.state FROM (SELECT DISTINCT l.pid ${heldBy} OFFSET 0) AS h
      LEFT JOIN LATERAL pg_stat_get_activity(h.pid) AS a ON true`;
  const row =
    holders === undefined
      ? undefined
      : `SELECT t.owner, t.fencing_token AS token, ${d.epochMs('t.locked_at')} AS granted_at, ${d.nowMs} AS now_ms
      FROM ${d.quote(holders)} AS t JOIN pg_stat_get_activity($2) AS a ON t.locked_at >= a.backend_start
      WHERE t.lock_key = $1 AND t.pid = $2`;
  const tagOf = (key: string): [string, string] => {
    const advisoryKey = BigInt(advisoryKeyOf(key));
    return [((advisoryKey >> 32n) & 0xffffffffn).toString(), (advisoryKey & 0xffffffffn).toString()];
  };
  return {
    async readHolder(run, key) {
      const tag = tagOf(key);
      for (let again = 0; ; again += 1) {
        const [held] = (await run(locker, tag)) as readonly LockerRow[];
        if (held === undefined) return [];
        const connection = Number(held.connection);
        if (row !== undefined && held.state === 'idle') {
          const [named] = await run(row, [key, connection]);
          if (named !== undefined) return [{ ...(named as object), connection }];
        }
        if (row === undefined || again === READS_AGAIN) return [{ connection, owner: null, token: null, granted_at: null, now_ms: 0 }];
        await new Promise((resolve) => setTimeout(resolve, again));
      }
    },
    // Ends the backend only while it still holds the key's lock, in one statement (pg_terminate_backend
    // needs no grant for a backend of the same role).
    endSession: (key, holder) => ({
      sql: `SELECT pg_terminate_backend(l.pid) AS ended ${heldBy} AND l.pid = $3`,
      parameters: [...tagOf(key), holder.connection],
    }),
    // A row per backend signalled; none once that holder had let go.
    ended: (records) => (records as ReadonlyArray<{ ended: unknown }>).some((record) => record.ended === true),
    alreadyGone: () => false,
  };
}
