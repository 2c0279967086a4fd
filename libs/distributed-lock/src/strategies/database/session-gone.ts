import type { QueryRunner } from 'typeorm';
import { lookUntil } from './look-until';

/**
 * Looks at the server's list of sessions, on `runner`, until session `id` has left it: true once it has,
 * false if it is still there after `withinMs`. A kill (`KILL CONNECTION`, `pg_terminate_backend(pid)`)
 * answers once it is sent, and the session frees its locks as it exits. The server frees a session's
 * transaction, row locks, advisory locks and `GET_LOCK` names before the session leaves the list
 * (`information_schema.PROCESSLIST`, `pg_stat_activity`), so a session gone from the list holds nothing.
 * The caller ends sessions of its own user, which that user sees there without a privilege.
 */
export function sessionGone(runner: QueryRunner, postgres: boolean, id: number, withinMs: number): Promise<boolean> {
  const look = postgres ? 'SELECT pid FROM pg_stat_activity WHERE pid = $1' : 'SELECT ID FROM information_schema.PROCESSLIST WHERE ID = ?';
  return lookUntil(async () => ((await runner.query(look, [id])) as unknown[]).length === 0, withinMs);
}
