// Every row of the README's install table, installed into a fresh Nest 11 and a fresh Nest 12 app with no
// flag: first the tarball and `ioredis` (the README's first install), then the row, as a user adds it. npm
// must resolve it without a peer or engine warning. Only the resolution is checked here (`--package-lock-only`:
// npm decides the whole tree, warns and refuses exactly as it does when it also downloads it, and nothing is
// built); the apps the check builds and runs install for real (fixtures.ts). Cached package data is reused
// between rows (`--prefer-offline`): the first install of each app fetched it moments before.
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { besideRedis, installRow, installTable, type InstallRow } from './install-table';
import { envFor, type NodeBinary } from './node-binaries';

/** What npm says when a peer range or an engine does not fit; any of it fails an install. */
export const INSTALL_TROUBLE = /ERESOLVE|peer dep|conflicting peer|overriding peer|invalid: |EBADENGINE/i;

/** Packages whose resolved version the report names. */
const REPORTED = ['ioredis', 'typeorm', '@nestjs/typeorm', 'mysql2', 'pg', 'better-sqlite3', 'node-zookeeper-client', 'etcd3', 'memcache-client', '@nestjs/schedule', '@nestjs/terminus', '@opentelemetry/api', '@opentelemetry/sdk-node'];

export interface MatrixOutcome {
  readonly app: string;
  readonly node: string;
  readonly install: string;
  readonly ok: boolean;
  readonly detail: string;
}

interface Command {
  readonly status: number | null;
  readonly output: string;
  readonly ms: number;
}

function npm(args: readonly string[], cwd: string, node: NodeBinary): Promise<Command> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn('npm', [...args], { cwd, env: envFor(node), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('close', (status) => resolve({ status, output, ms: Date.now() - started }));
  });
}

/** The versions npm chose for the packages the report names, from the lock it wrote. */
function resolved(dir: string): string {
  const lock = JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string }> };
  return REPORTED.flatMap((name) => {
    const version = lock.packages[`node_modules/${name}`]?.version;
    return version ? [`${name} ${version}`] : [];
  }).join(', ');
}

function outcomeOf(app: string, node: NodeBinary, install: string, command: Command, dir: string): MatrixOutcome {
  const trouble = command.output.split('\n').filter((line) => INSTALL_TROUBLE.test(line));
  const ok = command.status === 0 && trouble.length === 0;
  const detail = ok
    ? `resolved in ${Math.round(command.ms / 1000)} s: ${resolved(dir)}`
    : trouble.length
      ? trouble.slice(0, 6).join(' | ')
      : command.output.slice(-1_500);
  return { app, node: node.version, install, ok, detail };
}

/** Runs `work` over `items`, `limit` at a time. */
async function inTurns<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/**
 * The matrix for one app (its package.json as `nest new` wrote it) on `node`: the first install, then each
 * other row of the table beside it, `parallel` at a time. Reports each outcome as it ends.
 */
export async function installMatrix(options: {
  readonly app: string;
  readonly appDir: string;
  readonly tarball: string;
  readonly node: NodeBinary;
  readonly work: string;
  readonly parallel: number;
  readonly report: (outcome: MatrixOutcome) => void;
}): Promise<MatrixOutcome[]> {
  const { app, appDir, tarball, node, work, parallel, report } = options;
  const rows = installTable();
  const redis = installRow('Redis', rows);
  const base = join(work, `matrix-${app}`);
  mkdirSync(base, { recursive: true });
  cpSync(join(appDir, 'package.json'), join(base, 'package.json'));
  const flags = ['--package-lock-only', '--no-audit', '--no-fund'];
  const first = await npm(['install', tarball, ...redis.packages, ...flags], base, node);
  const firstOutcome = outcomeOf(app, node, `npm install <tarball> ${redis.packages.join(' ')}`, first, base);
  report(firstOutcome);
  if (!firstOutcome.ok) return [firstOutcome];
  const others = rows.filter((row) => row !== redis && row.packages.length > 0);
  const outcomes = await inTurns(others, parallel, async (row: InstallRow) => {
    const dir = join(work, `matrix-${app}-${row.label.replace(/[^a-zA-Z0-9]+/g, '-')}`);
    mkdirSync(dir, { recursive: true });
    for (const file of ['package.json', 'package-lock.json']) cpSync(join(base, file), join(dir, file));
    const packages = besideRedis(row);
    const command = await npm(['install', ...packages, ...flags, '--prefer-offline'], dir, node);
    const outcome = outcomeOf(app, node, `then npm install ${packages.join(' ')} (${row.label})`, command, dir);
    report(outcome);
    return outcome;
  });
  return [firstOutcome, ...outcomes];
}
