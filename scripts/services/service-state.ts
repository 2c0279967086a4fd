import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Everything needed to find, signal and restart one server process, from any process. */
export interface ServerRecord {
  /** Unique member name, e.g. "redis", "redis5-3", "zk3-2", "etcd3-1". */
  readonly name: string;
  /** Topology it belongs to, e.g. "redis5". */
  readonly topology: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly logFile: string;
  /** Ports it listens on (all on 127.0.0.1). */
  readonly ports: readonly number[];
  /** Its instance directory, removed when the topology goes down. */
  readonly dir: string;
  pid: number;
  /** Runs the server as this user and group (PostgreSQL, which refuses to run as root); default: as ourselves. */
  readonly uid?: number;
  readonly gid?: number;
  /** The signal of a clean, prompt stop; default SIGTERM (PostgreSQL: SIGINT, its "fast" shutdown). */
  readonly stopSignal?: NodeJS.Signals;
  /** Start time of `pid`, so that a recycled pid is never mistaken for ours. */
  startTicks?: number;
}

/**
 * One JSON file per running server under a fixed directory, so that any process (the CLI, Vitest's global
 * setup, a fault test in a worker) can find, signal or restart it, and so that a run that was killed
 * before it could clean up is cleaned up by the next one. One file per server means no write races.
 */
export const STATE_DIR = process.env.LOCK_SERVICES_STATE_DIR ?? join(tmpdir(), 'nest-lock-services');

export function instancesRoot(): string {
  const root = join(STATE_DIR, 'instances');
  mkdirSync(root, { recursive: true });
  return root;
}

function recordsDir(): string {
  const dir = join(STATE_DIR, 'records');
  mkdirSync(dir, { recursive: true });
  return dir;
}

export function saveRecord(record: ServerRecord): void {
  writeFileSync(join(recordsDir(), `${record.name}.json`), JSON.stringify(record, null, 2));
}

export function removeRecord(name: string): void {
  rmSync(join(recordsDir(), `${name}.json`), { force: true });
}

export function readRecord(name: string): ServerRecord | undefined {
  try {
    return JSON.parse(readFileSync(join(recordsDir(), `${name}.json`), 'utf8')) as ServerRecord;
  } catch {
    return undefined;
  }
}

export function listRecords(): ServerRecord[] {
  return readdirSync(recordsDir())
    .filter((file) => file.endsWith('.json'))
    .map((file) => readRecord(file.slice(0, -'.json'.length)))
    .filter((record): record is ServerRecord => record !== undefined);
}
