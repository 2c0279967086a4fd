import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** Totals of a cross-process run. */
export interface CrossProcessOutcome {
  readonly sections: number;
  readonly violations: number;
  readonly counter: number;
}

const ROOT = resolve(__dirname, '..', '..');
const WORKER = join(__dirname, 'cross-process.worker.ts');

/**
 * Starts `processes` separate Node processes that contend for one key with the named subject's strategy.
 * Inside the lock each creates a marker file exclusively (failing if another process is inside) and
 * increments a counter file with a read-yield-write, so overlaps show both as violations and as lost
 * increments. Every child is bounded by a timeout and killed if it overruns.
 */
export async function runCrossProcessFuzz(
  subject: string,
  key: string,
  processes: number,
  workersPerProcess: number,
  iterations: number,
  timeoutMs = 120_000,
): Promise<CrossProcessOutcome> {
  const dir = mkdtempSync(join(tmpdir(), 'lock-xproc-'));
  const counterFile = join(dir, 'counter');
  writeFileSync(counterFile, '0');
  try {
    const results = await Promise.all(
      Array.from({ length: processes }, () =>
        runWorkerProcess<{ sections: number; violations: number }>(WORKER, [subject, key, dir, String(workersPerProcess), String(iterations)], timeoutMs),
      ),
    );
    return {
      sections: results.reduce((sum, r) => sum + r.sections, 0),
      violations: results.reduce((sum, r) => sum + r.violations, 0),
      counter: Number(readFileSync(counterFile, 'utf8')),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Runs one worker script (TypeScript, through tsx) in a process of its own and resolves the JSON of its
 * last line of output; rejects when it fails, prints no result, or overruns `timeoutMs` (it is killed).
 */
export function runWorkerProcess<T>(worker: string, args: string[], timeoutMs: number): Promise<T> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', worker, ...args], { cwd: ROOT, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
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
