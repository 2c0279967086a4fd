import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

// The tests start worker processes by the hundred (cross-process contenders, holders to SIGKILL or SIGSTOP).
// Started through tsx, each one resolves and loads its TypeScript modules one by one through loader hooks, on
// a machine whose two cores the contract files already keep busy. The run's global setup bundles every worker
// once (esbuild, the transform tsx itself uses, so the code is the same), and a start then loads one file
// (CONTRIBUTING.md says what it saves). Without a bundle (a unit-only run, watch mode, or
// LOCK_TEST_WORKER_BUNDLES=off for TypeScript line numbers in a worker's stack), workers run through tsx.

const ROOT = resolve(__dirname, '..', '..');
/** Inside node_modules, so that the bundles' package imports resolve as the sources' do. */
const BUNDLES_ROOT = join(ROOT, 'node_modules', '.cache', 'lock-test-workers');
/**
 * Workers not started through `workerArgs`: missing-peer.worker.ts checks how an uninstalled package is
 * reported, from source on purpose; the others are Nest apps, which app-process.ts runs through swc for the
 * decorator metadata Nest's injection reads (esbuild emits none).
 */
const FROM_SOURCE = new Set([
  'test/support/missing-peer.worker.ts',
  'test/support/zookeeper-contender.worker.ts',
  'test/support/zookeeper-frozen.worker.ts',
  'test/support/leader/leader-app.worker.ts',
  'test/support/scheduled/scheduled-app.worker.ts',
]);

/** The node arguments that run the worker file `file` (absolute path): its bundle if this run built one, else tsx. */
export function workerArgs(file: string): string[] {
  const dir = process.env.LOCK_TEST_WORKER_BUNDLES;
  if (dir && dir !== 'off') {
    const bundle = join(dir, relative(ROOT, file).replace(/\.ts$/, '.cjs'));
    if (existsSync(bundle)) return [bundle];
  }
  return ['--import', 'tsx', file];
}

/**
 * Bundles every `*.worker.ts` under test/ into a directory of this run, and names it in
 * LOCK_TEST_WORKER_BUNDLES for the test workers. Returns the directory, to be removed at teardown.
 */
export async function buildWorkerBundles(watching: boolean): Promise<string | undefined> {
  // Watch mode reruns tests after an edit without running the global setup again: bundles made at its start
  // would run the code as it was then. The workers run from source there.
  if (process.env.LOCK_TEST_WORKER_BUNDLES === 'off' || watching) {
    delete process.env.LOCK_TEST_WORKER_BUNDLES;
    return undefined;
  }
  const { build } = await import('esbuild');
  removeBundlesOfEndedRuns();
  // A directory of this run alone (the pid of a killed run may come again): no bundle left by another run
  // can stand in for a worker this run does not bundle.
  const dir = join(BUNDLES_ROOT, `${process.pid}-${randomUUID()}`);
  mkdirSync(dir, { recursive: true });
  const entryPoints = workerFiles(join(ROOT, 'test')).filter((file) => !FROM_SOURCE.has(relative(ROOT, file)));
  await build({
    entryPoints,
    outbase: ROOT,
    outdir: dir,
    outExtension: { '.js': '.cjs' },
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: `node${process.versions.node.split('.')[0]}`,
    // Packages load from node_modules as they do for the sources (optional peers, native addons).
    packages: 'external',
    alias: { '@app/distributed-lock': join(ROOT, 'libs', 'distributed-lock', 'src') },
    tsconfig: join(ROOT, 'tsconfig.json'),
    logLevel: 'warning',
  });
  process.env.LOCK_TEST_WORKER_BUNDLES = dir;
  return dir;
}

export function removeWorkerBundles(dir: string | undefined): void {
  if (dir) rmSync(dir, { recursive: true, force: true });
}

function workerFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return workerFiles(path);
    return entry.name.endsWith('.worker.ts') ? [path] : [];
  });
}

/** Bundles left by runs that were killed before their teardown (their process is gone). */
function removeBundlesOfEndedRuns(): void {
  if (!existsSync(BUNDLES_ROOT)) return;
  for (const name of readdirSync(BUNDLES_ROOT)) {
    const pid = Number(name.split('-')[0]);
    if (Number.isInteger(pid) && !isAlive(pid)) rmSync(join(BUNDLES_ROOT, name), { recursive: true, force: true });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
