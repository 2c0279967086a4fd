import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { workerArgs } from '../support/worker-bundles';

/** What one cross-process session of a subject saw. */
export interface CrossProcessOutcome {
  /** The fuzz: sections run, overlaps seen, and the shared counter (lost increments show as a shortfall). */
  readonly sections: number;
  readonly violations: number;
  readonly counter: number;
  /** The ticks: per round, how many processes got the round's key. */
  readonly winners: readonly number[];
  /**
   * Rounds two processes held at once: their holds, each from its grant's answer to its release being sent
   * (a span inside the server's hold), overlapped. Two winners one after the other (a try whose request
   * reached the server after the first winner let go, on a loaded machine) are not at once.
   */
  readonly heldAtOnce: ReadonlySet<number>;
}

/** One won round, as a worker saw it: when the lock was known held (its grant answered) and when its release was sent (Date.now()). */
export type TickHold = [round: number, heldFrom: number, heldUntil: number];

/** The rounds in which two of `holds` overlapped. */
export function roundsHeldAtOnce(holds: readonly TickHold[]): Set<number> {
  const rounds = new Set<number>();
  for (const [i, [round, from, until]] of holds.entries()) {
    for (const [other, otherFrom, otherUntil] of holds.slice(i + 1)) {
      if (other === round && Math.max(from, otherFrom) < Math.min(until, otherUntil)) rounds.add(round);
    }
  }
  return rounds;
}

const ROOT = resolve(__dirname, '..', '..');
const WORKER = join(__dirname, 'cross-process.worker.ts');
/** A tick every 120 ms; a winner holds its key 80 ms, until every process that tried on time was refused. */
export const TICK_PERIOD_MS = 120;
export const TICK_HOLD_MS = 80;

/**
 * Starts `processes` separate Node processes of the named subject's strategy, which take part in two runs,
 * one after the other (one set of processes for both: starting TypeScript processes is the slow part).
 * - The fuzz: `workersPerProcess` workers each contend `iterations` times for one key. Inside the lock each
 *   creates a marker file exclusively (failing if another process is inside) and increments a counter file
 *   with a read-yield-write, so overlaps show both as violations and as lost increments.
 * - The ticks: once every process is done with the fuzz, all of them try a fresh key once at the same
 *   wall-clock instant, `tickRounds` times, as every instance's scheduler does at a cron tick.
 * Every child is bounded by a timeout and killed if it overruns.
 */
export async function runCrossProcessSession(
  subject: string,
  key: string,
  options: { processes: number; workersPerProcess: number; iterations: number; tickRounds: number },
  timeoutMs = 120_000,
): Promise<CrossProcessOutcome> {
  const dir = mkdtempSync(join(tmpdir(), 'lock-xproc-'));
  const counterFile = join(dir, 'counter');
  writeFileSync(counterFile, '0');
  try {
    const args = (index: number): string[] =>
      [subject, key, dir, String(index), String(options.workersPerProcess), String(options.iterations), String(options.tickRounds), String(TICK_PERIOD_MS), String(TICK_HOLD_MS)];
    const results = Array.from({ length: options.processes }, (_, i) =>
      runWorkerProcess<{ sections: number; violations: number; holds: TickHold[] }>(WORKER, args(i), timeoutMs),
    );
    await startTicksOnceReady(dir, options.processes, results, timeoutMs);
    const outcomes = await Promise.all(results);
    return {
      sections: outcomes.reduce((sum, r) => sum + r.sections, 0),
      violations: outcomes.reduce((sum, r) => sum + r.violations, 0),
      counter: Number(readFileSync(counterFile, 'utf8')),
      winners: Array.from({ length: options.tickRounds }, (_, round) => outcomes.filter((o) => o.holds.some(([won]) => won === round)).length),
      heldAtOnce: roundsHeldAtOnce(outcomes.flatMap((o) => o.holds)),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Once every worker has written dir/ready-<index>, writes dir/start: the first tick's wall-clock time. */
async function startTicksOnceReady(dir: string, processes: number, results: ReadonlyArray<Promise<unknown>>, timeoutMs: number): Promise<void> {
  // A worker that fails before it is ready ends the wait through its rejection.
  const failed = Promise.race(results).then(() => undefined);
  const deadline = Date.now() + timeoutMs;
  while (!Array.from({ length: processes }, (_, i) => existsSync(join(dir, `ready-${i}`))).every(Boolean)) {
    if (Date.now() > deadline) throw new Error(`the ${processes} processes were not ready within ${timeoutMs} ms`);
    await Promise.race([failed, new Promise((resolve) => setTimeout(resolve, 20))]);
  }
  writeFileSync(join(dir, 'start'), String(Date.now() + 200));
}

/**
 * Runs one worker script (TypeScript: its bundle, see worker-bundles.ts) in a process of its own and resolves the JSON of its
 * last line of output; rejects when it fails, prints no result, or overruns `timeoutMs` (it is killed).
 */
export function runWorkerProcess<T>(worker: string, args: string[], timeoutMs: number): Promise<T> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [...workerArgs(worker), ...args], { cwd: ROOT, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      const line = out.trim().split('\n').pop() ?? '';
      if (code !== 0) return reject(new Error(`worker exited with ${code ?? signal}: ${err.slice(-2000)}`));
      try {
        resolvePromise(JSON.parse(line) as T);
      } catch {
        reject(new Error(`worker printed no result: ${out.slice(-500)} ${err.slice(-1000)}`));
      }
    });
  });
}
