import { holderCheck, holderMarker } from './advisory-lock.sql';
import { signalledAny, type PinnedHolderStatements } from './pinned-lock-inspection';
import type { SqlDialect } from './sql-dialect';

/** How many times a query reads a holder again that it caught inside a statement (after 0, 1, 2… ms). */
const READS_AGAIN = 5;

/** One row of the first read: the backend that holds the key, and what it was doing right after. */
interface LockerRow {
  readonly connection: number | string;
  /**
   * `settled`: idle or running the strategy's check, after a last statement of this strategy's (see
   * `holderMarker`); `busy`: running another statement (a grant, maybe); `other`: anything else (idle after a
   * statement of another strategy or program, in a transaction, hidden from this role).
   */
  readonly look: 'settled' | 'busy' | 'other';
}

/**
 * PostgreSQL's advisory locks (the advisory strategy). `pg_locks` names the backend (pid) that holds the
 * key's lock; the holder table, written by the grant's own statement, names its owner and token. That
 * statement takes the lock before its row commits, so for a moment a backend holds the lock anew while the
 * key's row is still an earlier grant's; and a row is never deleted, so a backend may hold the key through
 * a grant that wrote no row here (a strategy with another table or none on the same pool) while its row
 * from an earlier grant is still there. Hence two reads:
 * 1. `pg_locks`, then that backend's activity, read after it in the same statement (the lock list is taken
 *    whole before the outer query asks). Settled: no statement of that backend is running but the
 *    strategy's check, and its last one came from this strategy (it opens with `holderMarker`): the grant of
 *    the hold just seen is this strategy's, and has committed.
 * 2. In a later snapshot, the row of (key, pid), written after the backend started (a pid the system
 *    reused is another backend): a grant of this backend that held during the query.
 * A backend caught running another statement (its grant) is read again; one that stays busy, one of
 * another role, one in a transaction (`scope: 'transaction'`, whose row would commit only with the section)
 * and one whose hold is not this strategy's is shown by its connection alone.
 *
 * `holders`: the holder table, or undefined where none is written (then every holder is shown by its
 * connection). `advisoryKeyOf`: the key's advisory key (`postgresAdvisoryKey`).
 */
export function advisoryHolderStatements(d: SqlDialect, holders: string | undefined, advisoryKeyOf: (key: string) => string): PinnedHolderStatements {
  // An int8 advisory key is the lock tag's two 32-bit halves (classid high, objid low, objsubid 1), in this
  // database only: advisory locks of other databases are other locks.
  const heldBy = `FROM pg_locks AS l WHERE l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND l.classid = $1::bigint::oid AND l.objid = $2::bigint::oid AND l.objsubid = 1 AND l.granted`;
  const tagOf = (key: string): [string, string] => {
    const advisoryKey = BigInt(advisoryKeyOf(key));
    return [((advisoryKey >> 32n) & 0xffffffffn).toString(), (advisoryKey & 0xffffffffn).toString()];
  };
  const connectionAlone = (connection: number): unknown[] => [{ connection, owner: null, token: null, granted_at: null, now_ms: 0 }];
  if (holders === undefined) {
    return {
      readHolder: async (run, key) => ((await run(`SELECT DISTINCT l.pid AS connection ${heldBy}`, tagOf(key))) as LockerRow[]).map((row) => connectionAlone(Number(row.connection))[0]),
      endSession: (key, holder) => ({ sql: `SELECT pg_terminate_backend(l.pid) AS ended ${heldBy} AND l.pid = $3`, parameters: [...tagOf(key), holder.connection] }),
      ended: signalledAny,
      alreadyGone: () => false,
    };
  }
  const marker = holderMarker(d, holders);
  const check = holderCheck(d, holders);
  // Parameters $3, $4: the marker and the check's text.
  const settled = `left(a.query, length($3)) = $3 AND (a.state = 'idle' OR (a.state = 'active' AND a.query = $4))`;
  const locker = `SELECT h.pid AS connection, CASE WHEN ${settled} THEN 'settled' WHEN a.state = 'active' THEN 'busy' ELSE 'other' END AS look
      FROM (SELECT DISTINCT l.pid ${heldBy} OFFSET 0) AS h LEFT JOIN LATERAL pg_stat_get_activity(h.pid) AS a ON true`;
  const row = `SELECT t.owner, t.fencing_token AS token, ${d.epochMs('t.locked_at')} AS granted_at, ${d.nowMs} AS now_ms
      FROM ${d.quote(holders)} AS t JOIN pg_stat_get_activity($2) AS a ON t.locked_at >= a.backend_start
      WHERE t.lock_key = $1 AND t.pid = $2`;
  return {
    async readHolder(run, key) {
      const tag = tagOf(key);
      for (let again = 0; ; again += 1) {
        const [held] = (await run(locker, [...tag, marker, check])) as readonly LockerRow[];
        if (held === undefined) return [];
        const connection = Number(held.connection);
        if (held.look === 'settled') {
          const [named] = await run(row, [key, connection]);
          if (named !== undefined) return [{ ...(named as object), connection }];
        }
        // Not this strategy's hold, or still busy after the reads again: its connection is all there is.
        if (held.look === 'other' || again === READS_AGAIN) return connectionAlone(connection);
        await new Promise((resolve) => setTimeout(resolve, again));
      }
    },
    // Ends the backend only while the hold the query named is still its own, checked in one statement: the
    // backend holds the key, is settled (a newer grant of ours would be running, or have rewritten the
    // row), and its row names that owner and token. Each read comes after the one before (LATERAL), and the
    // row is read FOR SHARE: the latest committed version, after the looks at the backend, waiting for a
    // grant that is rewriting it (the statement's snapshot, taken before those looks, may be older than a
    // grant that committed since). A holder shown by its connection alone is ended while that connection
    // holds the key.
    endSession: (key, holder) =>
      holder.token === undefined
        ? { sql: `SELECT pg_terminate_backend(l.pid) AS ended ${heldBy} AND l.pid = $3`, parameters: [...tagOf(key), holder.connection] }
        : {
            sql: `SELECT pg_terminate_backend(s.pid) AS ended FROM (SELECT l.pid ${heldBy} AND l.pid = $5 OFFSET 0) AS s
              JOIN LATERAL pg_stat_get_activity(s.pid) AS a ON ${settled}
              CROSS JOIN LATERAL (SELECT 1 FROM ${d.quote(holders)} AS t WHERE t.lock_key = $6 AND t.pid = s.pid AND t.locked_at >= a.backend_start
                AND t.owner = $7 AND t.fencing_token = $8 FOR SHARE) AS r`,
            parameters: [...tagOf(key), marker, check, holder.connection, key, holder.owner, holder.token],
          },
    ended: signalledAny,
    alreadyGone: () => false,
  };
}
