import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..');

/** An application process started from a worker file, with what it printed. */
export interface AppProcess {
  readonly name: string;
  readonly child: ChildProcess;
  readonly lines: string[];
  readonly exited: Promise<string>;
  /** Resolves the first printed line (from `from` on) that matches, or rejects after `timeoutMs`. */
  waitForLine(pattern: RegExp, timeoutMs: number, from?: number): Promise<string>;
  send(line: string): void;
  /** The last 4 000 characters it wrote to stderr (what a native abort leaves). */
  stderrTail(): string;
}

/**
 * Starts `worker` (a TypeScript file, compiled with decorator metadata by @swc-node/register, as Nest
 * needs) with `env` added, and `preload` modules required first (e.g. an offset clock).
 */
export function startAppProcess(name: string, worker: string, env: NodeJS.ProcessEnv, preload: readonly string[] = []): AppProcess {
  const child = spawn(process.execPath, ['-r', '@swc-node/register', ...preload.flatMap((file) => ['-r', file]), worker], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let stderr = '';
  let partial = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    const parts = (partial + chunk.toString()).split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts.filter(Boolean));
  });
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4_000)));
  const exited = new Promise<string>((done) => child.on('exit', (code, signal) => done(String(signal ?? code))));
  const waitForLine = (pattern: RegExp, timeoutMs: number, from = 0): Promise<string> =>
    new Promise((found, fail) => {
      const deadline = Date.now() + timeoutMs;
      const poll = (): void => {
        const line = lines.slice(from).find((candidate) => pattern.test(candidate));
        if (line !== undefined) return found(line);
        if (Date.now() > deadline || child.exitCode !== null) {
          return fail(new Error(`${name} printed no line matching ${pattern} within ${timeoutMs} ms (exit ${child.exitCode}); last lines: ${lines.slice(-5).join(' | ')}; stderr: ${stderr}`));
        }
        setTimeout(poll, 20);
      };
      poll();
    });
  return { name, child, lines, exited, waitForLine, send: (line) => void child.stdin?.write(`${line}\n`), stderrTail: () => stderr };
}

/** Stops a process: SIGTERM, then SIGKILL if it has not exited after `graceMs`. */
export async function stopAppProcess(app: AppProcess, graceMs = 10_000): Promise<void> {
  if (app.child.exitCode !== null || app.child.signalCode !== null) return;
  app.child.kill('SIGCONT');
  app.child.kill('SIGTERM');
  const timer = setTimeout(() => app.child.kill('SIGKILL'), graceMs);
  await app.exited;
  clearTimeout(timer);
}
