import { spawn, type SpawnOptions } from 'node:child_process';

/** What a finished command left: its exit status (null when a signal or the timeout ended it) and output. */
export interface CommandResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Why it could not run at all (not found, not executable). */
  readonly error?: Error;
}

/**
 * Runs a command to its end without blocking the event loop, as `spawnSync` would: the services start side
 * by side, and a blocked loop starves the others' readiness probes (a Redis that served within ms was once
 * reported not ready within 10 s while `mariadb-install-db` and `initdb` ran).
 */
export function runCommand(command: string, args: readonly string[], options: Pick<SpawnOptions, 'cwd' | 'uid' | 'gid' | 'env'> & { readonly timeoutMs?: number } = {}): Promise<CommandResult> {
  return new Promise((resolve) => {
    const { timeoutMs, ...spawnOptions } = options;
    const child = spawn(command, [...args], { ...spawnOptions, stdio: ['ignore', 'pipe', 'pipe'], ...(timeoutMs ? { timeout: timeoutMs } : {}) });
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', (error) => resolve({ status: null, stdout, stderr, error }));
    child.once('close', (status) => resolve({ status, stdout, stderr }));
  });
}
