import type { QueryRunner } from 'typeorm';
import type { LockDataSource } from './database-client.type';
import { cleanUpStarted } from './pool-clean-up';
import { sessionGone } from './session-gone';

/**
 * How long the end of a session is watched for before giving up on the confirmation. A killed session ends
 * within milliseconds; one rolling back a large transaction takes as long as the rollback.
 */
const CONFIRM_WITHIN_MS = 30_000;
/** PostgreSQL 14+: how long one `pg_terminate_backend(pid, timeout)` waits on the server for the backend to exit. */
const TERMINATE_WAIT_MS = 5_000;

/** MySQL/MariaDB: no such thread (it is gone already); not yours to kill. */
const MYSQL_UNKNOWN_THREAD = 1094;
const MYSQL_NOT_OWNER = 1095;
/** PostgreSQL: undefined_function (the two-argument `pg_terminate_backend` is PostgreSQL 14+). */
const PG_UNDEFINED_FUNCTION = '42883';

/** The end of one session, under way. */
export interface SessionEnd {
  /** The kill went out to the server: what the session held, or was about to be granted, goes with it. */
  readonly sent: boolean;
  /**
   * Drops the kill if it has not gone out yet (it still waits for a connection of the pool): the wait it was
   * for ended by itself. True when dropped; false when it went out (then `done` says when it is over).
   */
  dropIfUnsent(): boolean;
  /**
   * Resolves once the server said the session is gone (true), or the kill was dropped, or it could not be
   * confirmed (false: the server did not answer, or refused the kill). Never rejects.
   */
  readonly done: Promise<boolean>;
}

/**
 * Ends database sessions by their server id, from another connection of the same pool, and confirms that
 * the server has let go of everything they held: `KILL CONNECTION id` on MySQL/MariaDB, then a look at the
 * process list until the thread is gone (the server frees a thread's transaction, row locks and `GET_LOCK`
 * names before it leaves the list); `pg_terminate_backend(pid, timeout)` on PostgreSQL 14+, which waits for
 * the backend to exit (it releases its locks first), or `pg_terminate_backend(pid)` and a look at
 * `pg_stat_activity` on older servers.
 *
 * Why the session and not its statement: a cancel aimed at a statement (`KILL QUERY`, `pg_cancel_backend`)
 * lands on nothing when it reaches the server before the statement, or between two statements, and the
 * wait then goes on without its caller. A session that ends takes every wait and every lock of it along,
 * whatever its statements' state. Both need no privilege for the user's own sessions: MySQL and MariaDB
 * let a user kill its own threads and see them in the process list without PROCESS, and PostgreSQL lets a
 * role terminate the backends of its own role.
 */
export class SessionEnder {
  private readonly postgres: boolean;
  /** PostgreSQL older than 14 has no timeout argument: found at the first end, then remembered. */
  private terminateWaits = true;

  constructor(private readonly dataSource: LockDataSource) {
    this.postgres = dataSource.options.type === 'postgres';
  }

  /** Starts ending session `id`: the kill is sent as soon as a connection of the pool is free. */
  start(id: number): SessionEnd {
    let dropped = false;
    let sent = false;
    const ended = cleanUpStarted(this.dataSource);
    const done = (async (): Promise<boolean> => {
      const runner = this.dataSource.createQueryRunner();
      try {
        await runner.connect();
        if (dropped) return false;
        sent = true;
        return await (this.postgres ? this.terminate(runner, id) : this.kill(runner, id));
      } catch {
        return false;
      } finally {
        await runner.release().catch(() => undefined);
        ended();
      }
    })();
    return {
      get sent() {
        return sent;
      },
      dropIfUnsent: () => {
        if (sent) return false;
        dropped = true;
        return true;
      },
      done,
    };
  }

  /** MySQL/MariaDB: KILL CONNECTION, then the process list until the thread has left it. */
  private async kill(runner: QueryRunner, id: number): Promise<boolean> {
    try {
      await runner.query(`KILL CONNECTION ${Number(id)}`);
    } catch (error) {
      const errno = errnoOf(error);
      if (errno === MYSQL_UNKNOWN_THREAD) return true;
      if (errno === MYSQL_NOT_OWNER) return false;
      throw error;
    }
    return sessionGone(runner, false, id, CONFIRM_WITHIN_MS);
  }

  /** PostgreSQL: pg_terminate_backend, waiting on the server for the backend to exit where it can. */
  private async terminate(runner: QueryRunner, id: number): Promise<boolean> {
    const until = performance.now() + CONFIRM_WITHIN_MS;
    if (this.terminateWaits) {
      try {
        // True once the backend has exited; false when it is no backend (gone already) or still there after the wait.
        const rows = (await runner.query('SELECT pg_terminate_backend($1::int, $2::bigint) AS ended', [id, TERMINATE_WAIT_MS])) as Array<{ ended: boolean }>;
        if (rows[0]?.ended === true) return true;
      } catch (error) {
        if (codeOf(error) !== PG_UNDEFINED_FUNCTION) throw error;
        this.terminateWaits = false;
      }
    }
    if (!this.terminateWaits) await runner.query('SELECT pg_terminate_backend($1::int)', [id]);
    return sessionGone(runner, true, id, until - performance.now());
  }
}

function errnoOf(error: unknown): number {
  const shaped = error as { errno?: unknown; driverError?: { errno?: unknown } } | null;
  return Number(shaped?.driverError?.errno ?? shaped?.errno);
}

function codeOf(error: unknown): string {
  const shaped = error as { code?: unknown; driverError?: { code?: unknown } } | null;
  return String(shaped?.driverError?.code ?? shaped?.code);
}
