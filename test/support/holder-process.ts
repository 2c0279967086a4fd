import { spawn, type ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';
import { workerArgs } from './worker-bundles';

const ROOT = resolve(__dirname, '..', '..');

/** A separate process holding a lock, to be crashed (SIGKILL) or frozen (SIGSTOP) by a fault test. */
export interface HolderProcess {
  readonly child: ChildProcess;
  /** The fencing token it got, if the strategy has fencing. */
  readonly fencingToken: number | undefined;
  /** Lines the holder printed after acquiring (e.g. "lost <reason>"). */
  readonly lines: string[];
  /** Resolves when the holder exits, with its exit code or signal. */
  readonly exited: Promise<string>;
  /** Sends a line to the holder (e.g. "write"). */
  send(line: string): void;
  /** Resolves the first printed line that matches, or rejects after `timeoutMs`. */
  waitForLine(pattern: RegExp, timeoutMs: number): Promise<string>;
}

/** A holder process that may still be waiting for its lock (see `spawnHolder`). */
export interface WaitingHolderProcess {
  readonly child: ChildProcess;
  readonly lines: string[];
  /** What it wrote to stderr: the error it exited with, if any. */
  readonly stderr: () => string;
  readonly exited: Promise<string>;
}

/**
 * Starts `holder.worker.ts` without waiting for it to hold the lock: while someone else holds `key`, it
 * waits in line, the shape of an application instance that dies (SIGKILL) while queued.
 */
export function spawnHolder(subject: string, key: string, ttlMs: number, env: NodeJS.ProcessEnv = {}): WaitingHolderProcess {
  const child = spawn(process.execPath, [...workerArgs(join(__dirname, 'holder.worker.ts')), subject, key, String(ttlMs)], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean)));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<string>((done) => child.on('exit', (code, signal) => done(String(signal ?? code))));
  return { child, lines, stderr: () => stderr.slice(-2000), exited };
}

/**
 * Starts `holder.worker.ts`, which acquires `key` with the named contract subject and then holds it,
 * extending through the watchdog, until killed (or for 60 s at most). Resolves once it holds the lock.
 */
export function startHolder(subject: string, key: string, ttlMs: number, options: { env?: NodeJS.ProcessEnv; fencedResource?: string; historyFile?: string } = {}): Promise<HolderProcess> {
  return new Promise((resolvePromise, reject) => {
    const args = [...workerArgs(join(__dirname, 'holder.worker.ts')), subject, key, String(ttlMs), ...(options.fencedResource ? [options.fencedResource] : [])];
    const child = spawn(process.execPath, args, {
      cwd: ROOT,
      env: { ...process.env, ...options.env, ...(options.historyFile ? { LOCK_HISTORY_FILE: options.historyFile } : {}) },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const send = (line: string): void => {
      child.stdin?.write(`${line}\n`);
    };
    const waitForLine = (pattern: RegExp, timeoutMs: number): Promise<string> =>
      new Promise((found, fail) => {
        const deadline = Date.now() + timeoutMs;
        const poll = (): void => {
          const line = lines.find((candidate) => pattern.test(candidate));
          if (line !== undefined) return found(line);
          if (Date.now() > deadline) return fail(new Error(`holder printed no line matching ${pattern} within ${timeoutMs} ms; it printed: ${lines.join(' | ')}`));
          setTimeout(poll, 20);
        };
        poll();
      });
    const lines: string[] = [];
    let stderr = '';
    let settled = false;
    const exited = new Promise<string>((done) => child.on('exit', (code, signal) => done(String(signal ?? code))));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`holder did not acquire within 30 s: ${stderr.slice(-1000)}`));
    }, 30_000);
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout?.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n').filter(Boolean)) {
        lines.push(line);
        const match = /^held (\S+)/.exec(line);
        if (match && !settled) {
          settled = true;
          clearTimeout(timer);
          resolvePromise({ child, fencingToken: match[1] === '-' ? undefined : Number(match[1]), lines, exited, send, waitForLine });
        }
      }
    });
    child.on('exit', (code) => {
      if (!settled) {
        clearTimeout(timer);
        reject(new Error(`holder exited with ${code} before acquiring: ${stderr.slice(-1000)}`));
      }
    });
  });
}
