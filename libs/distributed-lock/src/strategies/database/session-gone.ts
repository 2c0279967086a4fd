import { setTimeout as sleep } from 'node:timers/promises';

/** Runs one statement on some connection of the pool and resolves its rows. */
type Statement = (sql: string, parameters: unknown[]) => Promise<readonly unknown[]>;

/** The longest pause between two looks (the first is 1 ms, doubled each time). */
const LONGEST_LOOK_PAUSE_MS = 50;

/**
 * Looks at the server's list of sessions until session `id` has left it: true once it has, false if it is
 * still there after `withinMs`. A kill (`KILL CONNECTION`, `pg_terminate_backend(pid)`) answers once it is
 * sent, and the session frees its locks as it exits, after its client may already have been told that it
 * ended. The server frees a session's transaction, row locks, advisory locks and `GET_LOCK` names before the
 * session leaves the list (`information_schema.PROCESSLIST`, `pg_stat_activity`), so a session gone from
 * the list holds nothing. A user sees its own sessions there without a privilege.
 */
export async function sessionGone(run: Statement, postgres: boolean, id: number, withinMs: number): Promise<boolean> {
  const look = postgres ? 'SELECT pid FROM pg_stat_activity WHERE pid = $1' : 'SELECT ID FROM information_schema.PROCESSLIST WHERE ID = ?';
  const until = performance.now() + withinMs;
  for (let pause = 1; ; pause = Math.min(pause * 2, LONGEST_LOOK_PAUSE_MS)) {
    if ((await run(look, [id])).length === 0) return true;
    if (performance.now() > until) return false;
    await sleep(pause);
  }
}
