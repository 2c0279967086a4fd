#!/usr/bin/env node
// `npm run pack:lib`: the tarball users install, built from this clone with nothing but Node and npm. The
// library is compiled in a folder of its own, against the packages its build needs (the library package's
// `devDependencies`: TypeScript and the types of Nest and of the backend clients, installed without their
// install scripts, so no native build), not the whole workspace's 490. Writes
// nest-distributed-lock-<version>.tgz at the repository's root (or `--pack-destination <dir>`), with the
// README and the LICENSE. Fails on any engine warning: the build installs cleanly on every Node the README
// supports (its Nest types are Nest 11's, whose dependencies ask for no newer Node than 20).
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const library = join(root, 'libs', 'distributed-lock');
const args = process.argv.slice(2);
const destination = resolve(args.includes('--pack-destination') ? args[args.indexOf('--pack-destination') + 1] : root);

function run(command, commandArgs, cwd) {
  const result = spawnSync(command, commandArgs, { cwd, encoding: 'utf8', env: { ...process.env, npm_config_update_notifier: 'false' } });
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`;
  if (result.status !== 0) {
    process.stderr.write(output);
    throw new Error(`${command} ${commandArgs.join(' ')} failed (${result.status ?? result.signal})`);
  }
  return { stdout: result.stdout ?? '', output };
}

const work = mkdtempSync(join(tmpdir(), 'pack-lib-'));
try {
  // The library as it sits in the repository (its tsconfig extends the root one, two folders up).
  const copy = join(work, 'libs', 'distributed-lock');
  cpSync(join(library, 'src'), join(copy, 'src'), { recursive: true, filter: (path) => !path.endsWith('.spec.ts') });
  for (const file of ['package.json', 'tsconfig.lib.json']) cpSync(join(library, file), join(copy, file));
  const rootConfig = JSON.parse(readFileSync(join(root, 'tsconfig.json'), 'utf8').replace(/^\s*\/\/.*$/gm, ''));
  // The workspace's path aliases and test types are not the library's.
  delete rootConfig.compilerOptions.paths;
  rootConfig.compilerOptions.types = ['node'];
  writeFileSync(join(work, 'tsconfig.json'), JSON.stringify({ compilerOptions: rootConfig.compilerOptions }, null, 2));
  for (const file of ['README.md', 'LICENSE']) cpSync(join(root, file), join(copy, file));

  console.log('pack:lib: installing what the build needs (the library package.json\'s devDependencies)');
  const install = run('npm', ['install', '--ignore-scripts', '--no-package-lock', '--no-audit', '--no-fund'], copy).output;
  process.stdout.write(install.split('\n').filter((line) => /^added /.test(line)).map((line) => `pack:lib: ${line}\n`).join(''));
  const engine = install.split('\n').filter((line) => /EBADENGINE/.test(line));
  if (engine.length) throw new Error(`the build's install warned about engines on Node ${process.version}:\n${engine.join('\n')}`);

  run(join(copy, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.lib.json'], copy);
  if (!existsSync(join(copy, 'dist', 'index.d.ts'))) throw new Error('the build wrote no dist/index.d.ts');
  // Packed as is: the library's own prepack builds with the workspace, which this clone may not have.
  mkdirSync(destination, { recursive: true });
  const tarball = run('npm', ['pack', '--ignore-scripts', '--pack-destination', destination], copy).stdout.trim().split('\n').at(-1);
  console.log(`pack:lib: ${join(destination, tarball)}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
