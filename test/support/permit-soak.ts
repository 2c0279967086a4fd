import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { checkPermits, type PermitCheckResult } from './history/check-permits';
import type { HistoryLog } from './history/history-log';
import { monotonicNow, type HoldRecord } from './history/hold-history';
import { stopProcess } from './stop-process';
import { workerArgs } from './worker-bundles';

const ROOT = resolve(__dirname, '..', '..');
const WORKER = join(__dirname, 'permit-soak.worker.ts');
const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/** The shape of a semaphore soak (see `runPermitSoak`). */
export interface PermitSoakOptions {
  readonly key: string;
  /** Where every process records its holds, and this function the freezes and kills. */
  readonly history: HistoryLog;
  readonly processes: number;
  /** Contenders per process (one lock service each process). */
  readonly contenders: number;
  /** The semaphore's size. */
  readonly permits: number;
  /** Each permit's lease, in ms (kept alive by the watchdog). */
  readonly ttlMs: number;
  /** How long the processes contend, in ms; they stop by themselves then. */
  readonly durationMs: number;
  /** How long a process stays frozen (SIGSTOP), in ms: past `ttlMs`, so that frozen holders lose their permits. */
  readonly freezeMs: number;
  /** How many times a process is killed (SIGKILL) instead of frozen; each is replaced by a new process. */
  readonly kills: number;
  /** The contract subject whose strategy the processes use. Default 'redis (fair)'. */
  readonly subject?: string;
}

/** What a semaphore soak saw. */
export interface PermitSoakOutcome {
  readonly sections: number;
  readonly timeouts: number;
  readonly lost: number;
  /** The library's typed errors other than a timeout or a loss (e.g. a frozen wait's silence watch), by process. */
  readonly otherTyped: readonly string[];
  /** Errors that were not the library's typed ones, by process. */
  readonly untyped: readonly string[];
  readonly freezes: number;
  readonly kills: number;
  /** Holds inside their section when their process was frozen, and contenders frozen while not holding. */
  readonly frozenHolders: number;
  readonly frozenWaiters: number;
  /** Processes that ended without reporting (other than those killed on purpose): name, exit and stderr. */
  readonly crashed: readonly string[];
  readonly check: PermitCheckResult;
}

interface SoakProcess {
  readonly name: string;
  readonly child: ChildProcess;
  readonly lines: string[];
  readonly exited: Promise<string>;
  stderr: string;
  killed: boolean;
}

function startProcess(name: string, options: PermitSoakOptions, until: number, stopFile: string): SoakProcess {
  const env = {
    ...process.env,
    SOAK_NAME: name,
    SOAK_KEY: options.key,
    SOAK_PERMITS: String(options.permits),
    SOAK_TTL: String(options.ttlMs),
    SOAK_UNTIL: String(until),
    SOAK_STOP_FILE: stopFile,
    SOAK_CONTENDERS: String(options.contenders),
    SOAK_SUBJECT: options.subject ?? 'redis (fair)',
    LOCK_HISTORY_FILE: options.history.file,
  };
  const child = spawn(process.execPath, workerArgs(WORKER), { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const started: SoakProcess = { name, child, lines: [], exited: new Promise((done) => child.on('exit', (code, signal) => done(String(signal ?? code)))), stderr: '', killed: false };
  let partial = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    const parts = (partial + chunk.toString()).split('\n');
    partial = parts.pop() ?? '';
    started.lines.push(...parts.filter(Boolean));
  });
  child.stderr?.on('data', (chunk: Buffer) => (started.stderr = (started.stderr + chunk.toString()).slice(-2_000)));
  return started;
}

async function contending(started: SoakProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!started.lines.includes('contending')) {
    if (Date.now() > deadline) throw new Error(`${started.name} did not start within ${timeoutMs} ms: ${started.stderr}`);
    await sleep(20);
  }
}

/**
 * The long semaphore run of issue 42, item 9, bounded: `processes` processes of `contenders` contenders
 * each take permits of one semaphore for `durationMs`, while one process at a time is frozen with SIGSTOP
 * for `freezeMs` (past the lease: whoever of it holds loses the permit, whoever waits is handed places it
 * does not claim) or, `kills` times, killed with SIGKILL and replaced. The holds, freezes and kills go into
 * `options.history`, which is then checked (see `checkPermits`): never more than `permits` places in use.
 * Ends by itself: the processes stop at the end of `durationMs` and are killed 30 s after it at the latest.
 */
export async function runPermitSoak(options: PermitSoakOptions): Promise<PermitSoakOutcome> {
  const { history } = options;
  // Contention ends when this file appears, `durationMs` after every process runs (starting TypeScript
  // processes takes seconds); `until` bounds the processes should this one die first.
  const startupMs = 60_000;
  const until = Date.now() + 2 * startupMs + options.durationMs;
  const stopFile = `${history.file}.stop`;
  let next = 0;
  const live: SoakProcess[] = Array.from({ length: options.processes }, () => startProcess(`p${next++}`, options, until, stopFile));
  const all = [...live];
  let freezes = 0;
  let kills = 0;
  try {
    await Promise.all(live.map((started) => contending(started, startupMs)));
    const stopAt = Date.now() + options.durationMs;
    const stopFaultsAt = stopAt - options.freezeMs - 2_000;
    for (let fault = 0; Date.now() < stopFaultsAt; fault += 1) {
      await sleep(1_000 + Math.random() * 1_500);
      const victim = live[Math.floor(Math.random() * live.length)];
      const pid = victim.child.pid as number;
      if (kills < options.kills && fault % 3 === 1) {
        victim.killed = true;
        victim.child.kill('SIGKILL');
        await victim.exited;
        history.killed(victim.name, monotonicNow());
        kills += 1;
        const replacement = startProcess(`p${next++}`, options, until, stopFile);
        // Not waited for: it joins when it has started (a process that never does is reported at the end).
        live.splice(live.indexOf(victim), 1, replacement);
        all.push(replacement);
      } else {
        // From the moment it is seen stopped: a section it began as the signal was on its way was held through the freeze.
        const from = await stopProcess(pid);
        await sleep(options.freezeMs);
        process.kill(pid, 'SIGCONT');
        history.paused(victim.name, from, monotonicNow());
        freezes += 1;
      }
    }
    await sleep(Math.max(0, stopAt - Date.now()));
    writeFileSync(stopFile, '');
    await Promise.all(
      all.map(async (started) => {
        const timer = setTimeout(() => started.child.kill('SIGKILL'), 30_000);
        await started.exited;
        clearTimeout(timer);
      }),
    );
  } finally {
    for (const started of all) {
      started.child.kill('SIGCONT');
      started.child.kill('SIGKILL');
    }
    await Promise.all(all.map((started) => started.exited));
    rmSync(stopFile, { force: true });
  }
  const totals = { sections: 0, timeouts: 0, lost: 0, otherTyped: [] as string[], untyped: [] as string[], crashed: [] as string[] };
  for (const started of all) {
    if (started.killed) continue;
    const done = started.lines.find((line) => line.startsWith('done '));
    if (!done) {
      totals.crashed.push(`${started.name} (${await started.exited}): ${started.stderr.slice(-1_000)}`);
      continue;
    }
    const counts = JSON.parse(done.slice('done '.length)) as { sections: number; timeouts: number; lost: number; otherTyped: string[]; untyped: string[] };
    totals.sections += counts.sections;
    totals.timeouts += counts.timeouts;
    totals.lost += counts.lost;
    totals.otherTyped.push(...counts.otherTyped.map((error) => `${started.name}: ${error}`));
    totals.untyped.push(...counts.untyped.map((error) => `${started.name}: ${error}`));
  }
  const records = history.read();
  const holds = records.filter((record): record is HoldRecord => record.kind === 'hold');
  let frozenHolders = 0;
  let frozenWaiters = 0;
  for (const record of records) {
    if (record.kind !== 'paused') continue;
    const at = BigInt(record.from);
    const inside = holds.filter((hold) => hold.holder === record.holder && BigInt(hold.from) <= at && (hold.until === undefined || BigInt(hold.until) > at)).length;
    frozenHolders += inside;
    frozenWaiters += Math.max(0, options.contenders - inside);
  }
  return { ...totals, freezes, kills, frozenHolders, frozenWaiters, check: checkPermits(records, options.permits) };
}
