import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { BenchShape, BenchSubject } from './bench-subject';
import type { ContendResult } from './contend';
import { wallClockMs } from './stats';
import { sqlitePath } from './subjects';

const ROOT = resolve(__dirname, '..');

/**
 * `workers` contenders spread over `processes` child processes (bench/worker.ts), all on one key for
 * `durationMs`, starting together once every child is connected. Overlaps are detected across processes
 * with an exclusive marker file. Bounded: a child that overruns is killed.
 *
 * `warmUpMs`: the contenders run that long before the measured window, unmeasured (overlaps still count).
 * A child starts cold: its JIT compiles the hot paths while it contends, on cores it shares with the other
 * children and the server, and a rate measured from the start mixes that in, in proportion to how much code
 * a contender runs (`bench/results/sections-over-time.md`). App instances run for hours.
 */
export async function runMultiProcess(
  subject: BenchSubject,
  workers: number,
  processes: number,
  durationMs: number,
  layout: { shape: BenchShape; holdMs: number } = { shape: 'shared', holdMs: 0 },
  warmUpMs = 0,
): Promise<{ result: ContendResult; elapsed: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'lock-bench-'));
  const key = `bench:${randomUUID()}`;
  const perProcess = Math.max(1, Math.round(workers / processes));
  // Settings every process must share (the SQLite file) go into the environment the children inherit.
  sqlitePath();
  const children = Array.from({ length: processes }, (_, p) =>
    startChild(
      [subject.id, key, String(perProcess), join(dir, 'inside'), `p${p}w`, join(dir, `result-${p}.json`), String(layout.shape === 'instances' ? perProcess : 1), String(layout.holdMs)],
      warmUpMs + durationMs + 60_000,
    ),
  );
  try {
    await Promise.all(children.map((child) => child.ready));
    // Everyone connected: start together shortly, so that no process gets a head start.
    const startAt = wallClockMs() + 200;
    for (const child of children) child.start(startAt, startAt + warmUpMs, startAt + warmUpMs + durationMs);
    const results = await Promise.all(children.map((child) => child.done));
    const merged: ContendResult = {
      sections: results.flatMap((r) => r.sections),
      inWindow: results.reduce((sum, r) => sum + r.inWindow, 0),
      waits: results.flatMap((r) => r.waits),
      workerWaitP99: results.flatMap((r) => r.workerWaitP99),
      perWorker: results.flatMap((r) => r.perWorker),
      failures: results.reduce((sum, r) => sum + r.failures, 0),
      violations: results.reduce((sum, r) => sum + r.violations, 0),
    };
    return { result: merged, elapsed: durationMs };
  } finally {
    for (const child of children) child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

interface BenchChild {
  /** Resolves once the child has connected and waits for its start time. */
  readonly ready: Promise<void>;
  readonly done: Promise<ContendResult>;
  /** Contend from `startAt`, measure from `measureFrom`, stop at `endAt` (wall-clock ms). */
  start(startAt: number, measureFrom: number, endAt: number): void;
  kill(): void;
}

function startChild(args: string[], timeoutMs: number): BenchChild {
  const child = spawn(process.execPath, ['-r', '@swc-node/register', join(__dirname, 'worker.ts'), ...args], { cwd: ROOT, env: process.env, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolvePromise) => (markReady = resolvePromise));
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    if (out.includes('ready')) markReady();
  });
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const done = new Promise<ContendResult>((resolvePromise, reject) => {
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`bench worker failed (${code}): ${err.slice(-1500)}`));
      resolvePromise(JSON.parse(readFileSync(args[5], 'utf8')) as ContendResult);
    });
  });
  // A child that dies before it is ready fails the case instead of leaving the others waiting.
  const readyOrDead = Promise.race([ready, done.then(() => Promise.reject(new Error('bench worker exited before it was ready')))]);
  readyOrDead.catch(() => undefined);
  done.catch(() => undefined);
  return {
    ready: readyOrDead,
    done,
    start: (startAt, measureFrom, endAt) => child.stdin.end(`${startAt} ${measureFrom} ${endAt}\n`),
    kill: () => {
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

