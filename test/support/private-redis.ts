import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './free-port';

/** A Redis of one test's own on a free loopback port, to freeze (SIGSTOP) without touching shared servers. */
export interface PrivateRedis {
  readonly url: string;
  readonly port: number;
  freeze(): void;
  thaw(): void;
  stop(): Promise<void>;
}

/**
 * Starts `redis-server` (Debian's, as the services tool uses) and resolves once it answers PING. `extraArgs`
 * go to its command line (`--replicaof 127.0.0.1 <port>`, `--rename-command WAIT ""`).
 */
export async function startPrivateRedis(extraArgs: readonly string[] = []): Promise<PrivateRedis> {
  const port = await freePort();
  // Its own directory: a replica writes the master's snapshot there (never into the working tree).
  const dir = mkdtempSync(join(tmpdir(), 'private-redis-'));
  const child: ChildProcess = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--dir', dir, '--repl-diskless-sync-delay', '0', ...extraArgs],
    { stdio: 'ignore', cwd: dir },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `redis://127.0.0.1:${port}`;
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  // Refused until the server listens: the failed connect() is retried below, not reported as unhandled.
  probe.on('error', () => undefined);
  try {
    for (let tries = 0; ; tries += 1) {
      try {
        await probe.connect();
        await probe.ping();
        break;
      } catch (error) {
        if (tries > 100) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  } finally {
    probe.disconnect();
  }
  return {
    url,
    port,
    freeze: () => child.kill('SIGSTOP'),
    thaw: () => child.kill('SIGCONT'),
    stop: async () => {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
