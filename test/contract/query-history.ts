import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { LockInfo, LockService } from '@app/distributed-lock';
import { HistoryLog } from '../support/history/history-log';
import { monotonicNow, type HoldRecord } from '../support/history/hold-history';
import { workerArgs } from '../support/worker-bundles';

const ROOT = resolve(__dirname, '..', '..');
const WORKER = join(__dirname, 'query-history.worker.ts');
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** One query, with the monotonic instants it was sent and answered (the backend's look lies between). */
export interface TimedQuery {
  readonly sent: bigint;
  readonly answered: bigint;
  readonly info: LockInfo;
}

/** What a session saw: the queries, every hold the processes recorded, and each holder's process id. */
export interface QueryHistorySession {
  readonly queries: readonly TimedQuery[];
  readonly holds: readonly HoldRecord[];
  readonly pids: ReadonlyMap<string, number>;
}

/**
 * Runs `processes` contender processes of the named subject on `key`, each taking the key again and again
 * for `durationMs` from its start and recording its holds in a shared history, while `observer` queries
 * the key every `everyMs` until they are all done. Resolves with the queries and the history read back.
 */
export async function runQueryHistorySession(
  subject: string,
  key: string,
  observer: LockService,
  options: { processes: number; durationMs: number; holdMs: number; everyMs: number },
): Promise<QueryHistorySession> {
  const dir = mkdtempSync(join(tmpdir(), 'lock-query-history-'));
  const log = new HistoryLog(join(dir, 'history.jsonl'));
  try {
    const pids = new Map<string, number>();
    const exits = Array.from({ length: options.processes }, (_, i) => {
      const holder = `p${i + 1}`;
      const child = spawn(process.execPath, [...workerArgs(WORKER), subject, key, log.file, holder, String(options.durationMs), String(options.holdMs)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      pids.set(holder, child.pid as number);
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const killer = setTimeout(() => child.kill('SIGKILL'), options.durationMs + 60_000);
      return new Promise<void>((done, fail) =>
        child.on('exit', (code) => {
          clearTimeout(killer);
          if (code === 0) done();
          else fail(new Error(`${holder} exited with ${code}: ${stderr.slice(-1500)}`));
        }),
      );
    });
    let running = true;
    const done = Promise.all(exits).finally(() => (running = false));
    const queries: TimedQuery[] = [];
    const asking = (async () => {
      while (running) {
        const sent = BigInt(monotonicNow());
        const info = await observer.query(key);
        queries.push({ sent, answered: BigInt(monotonicNow()), info });
        await sleep(options.everyMs);
      }
    })();
    await Promise.all([done, asking]);
    return { queries, holds: log.read().filter((record): record is HoldRecord => record.kind === 'hold'), pids };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Where the queries disagree with the history (an empty list when they agree). For each query, answered
 * somewhere between `sent` and `answered`:
 * - a hold the history shows under way the whole time (its section began before the query was sent and
 *   ended after it was answered) is the holder the query names;
 * - the holder it names is a hold of the history, with the same fencing token, in the process that
 *   recorded it, and whose release had not come back before the query was sent;
 * - each waiter it names was granted later (its section began after the query was sent), and when
 *   `inOrder`, in the order named;
 * - with `unnamedHolders`, a holder shown without an owner id (host, pid and token null: the backend knows
 *   only its connection) is not one of the history's, and is not checked against it.
 */
export function disagreements(session: QueryHistorySession, inOrder: boolean, unnamedHolders = false): string[] {
  const problems: string[] = [];
  const byOwner = new Map(session.holds.map((hold) => [hold.owner, hold]));
  for (const [n, { sent, answered, info }] of session.queries.entries()) {
    const where = `query ${n} [${sent}..${answered}]`;
    const throughout = session.holds.filter((hold) => BigInt(hold.from) <= sent && hold.until !== undefined && BigInt(hold.until) >= answered);
    for (const hold of throughout) {
      if (!info.held.some((held) => held.owner.id === hold.owner)) problems.push(`${where}: ${hold.holder} held it throughout (token ${hold.token}), the query named ${JSON.stringify(info.held.map((held) => held.owner.id))}`);
    }
    for (const held of info.held) {
      const hold = byOwner.get(held.owner.id);
      // A holder the backend shows by its connection alone (caught in its grant): no owner id to check.
      if (!hold && unnamedHolders && held.owner.host === null && held.owner.pid === null && held.fencingToken === null) continue;
      if (!hold) {
        problems.push(`${where}: named holder ${held.owner.id} is no hold of the history`);
        continue;
      }
      if (held.fencingToken !== (hold.token ?? null)) problems.push(`${where}: token ${held.fencingToken}, the holder's own ${hold.token}`);
      if (held.owner.pid !== session.pids.get(hold.holder)) problems.push(`${where}: pid ${held.owner.pid}, ${hold.holder}'s is ${session.pids.get(hold.holder)}`);
      if (hold.outcome === undefined) problems.push(`${where}: ${hold.holder}'s hold never ended`);
    }
    const waiters = (info.pending ?? []).map((waiter) => byOwner.get(waiter.owner.id));
    for (const [i, hold] of waiters.entries()) {
      const id = info.pending?.[i].owner.id;
      if (!hold) problems.push(`${where}: named waiter ${id} was never granted`);
      else if (BigInt(hold.from) < sent) problems.push(`${where}: named waiter ${hold.holder} (${id}) was already holding before the query`);
    }
    if (inOrder) {
      const starts = waiters.map((hold) => (hold ? BigInt(hold.from) : undefined));
      for (let i = 1; i < starts.length; i += 1) {
        const [before, after] = [starts[i - 1], starts[i]];
        if (before !== undefined && after !== undefined && after < before) problems.push(`${where}: waiter ${i + 1} was served before waiter ${i}`);
      }
    }
  }
  return problems;
}
