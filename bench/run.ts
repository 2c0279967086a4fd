// npm run bench [-- --quick] [--only redis,redlock,...] [--shapes shared,...] [--workers 1,8] [--out FILE]
// npm run bench -- --distance [--rtts 0,1,5,20] [--only …] [--duration MS]: the strategies across distance (bench/distance.ts)
// Every subject (ours, peers, raw floors) through the same cases on one machine in one run; JSON rows to
// bench/results/latest.json (or --out) and a markdown report next to it. Bounded: each case has a fixed
// duration, and each child process is killed if it overruns. It runs under @swc-node/register, not tsx:
// tsx compiles with esbuild's keepNames, which wraps every closure our TypeScript creates in a naming call
// (about 12 % of the CPU at 32 Redlock workers) that compiled JavaScript, as users run it, does not make.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { startTopology, stopTopology, type TopologyName } from '../scripts/services';
import type { Backend, BenchShape, BenchSubject } from './bench-subject';
import type { ContendResult } from './contend';
import { caseInTurns } from './interleaved';
import { runMultiProcess } from './multi-process';
import { fairness, handoffFigures, quantile, round } from './stats';
import { BENCH_SUBJECTS } from './subjects';
import { runDistance } from './distance';
import { OPTIMISTIC_SUBJECTS } from './optimistic-subjects';
import { runOptimistic, uncontendedUpdatesInTurns } from './optimistic-run';
import { markdown, type BenchRow } from './report';

interface BenchCase {
  readonly name: 'uncontended' | 'contended';
  readonly workers: number;
  readonly processes: number;
  readonly shape: BenchShape;
  /** Work inside each critical section, in ms (a checkout in the flash sale). */
  readonly holdMs: number;
}

/** The flash sale's checkout inside the lock. */
const FLASH_SALE_HOLD_MS = 1;

const CASES: readonly BenchCase[] = [
  // (a) workers sharing one client in one process.
  { name: 'uncontended', workers: 1, processes: 1, shape: 'shared', holdMs: 0 },
  { name: 'contended', workers: 2, processes: 1, shape: 'shared', holdMs: 0 },
  { name: 'contended', workers: 8, processes: 1, shape: 'shared', holdMs: 0 },
  { name: 'contended', workers: 32, processes: 1, shape: 'shared', holdMs: 0 },
  { name: 'contended', workers: 8, processes: 4, shape: 'shared', holdMs: 0 },
  // (b) every contender its own app instance (own client, own connections), in one process and across 4.
  { name: 'contended', workers: 8, processes: 1, shape: 'instances', holdMs: 0 },
  { name: 'contended', workers: 32, processes: 1, shape: 'instances', holdMs: 0 },
  { name: 'contended', workers: 8, processes: 4, shape: 'instances', holdMs: 0 },
  { name: 'contended', workers: 32, processes: 4, shape: 'instances', holdMs: 0 },
  // (c) the flash sale: 4 app instances (processes) × 8 concurrent requests, each holding the lock for a checkout.
  { name: 'contended', workers: 32, processes: 4, shape: 'flash-sale', holdMs: FLASH_SALE_HOLD_MS },
];

const TOPOLOGY_OF: Partial<Record<Backend, TopologyName>> = { redis: 'redis', redis5: 'redis5', mysql: 'mariadb', postgres: 'postgres', zookeeper: 'zookeeper', etcd: 'etcd', memcached: 'memcached' };
const ROOT = resolve(__dirname, '..');

function parseArgs(argv: string[]): { quick: boolean; only: string[] | undefined; shapes: BenchShape[] | undefined; workers: number[] | undefined; out: string } {
  const quick = argv.includes('--quick');
  const onlyAt = argv.indexOf('--only');
  const shapesAt = argv.indexOf('--shapes');
  const workersAt = argv.indexOf('--workers');
  const outAt = argv.indexOf('--out');
  return {
    quick,
    only: onlyAt >= 0 ? argv[onlyAt + 1]?.split(',') : undefined,
    shapes: shapesAt >= 0 ? (argv[shapesAt + 1]?.split(',') as BenchShape[]) : undefined,
    // Cases by their number of workers, e.g. `--workers 1`: the uncontended case alone, at full length.
    workers: workersAt >= 0 ? argv[workersAt + 1]?.split(',').map(Number) : undefined,
    out: outAt >= 0 ? resolve(argv[outAt + 1]) : join(ROOT, 'bench', 'results', 'latest.json'),
  };
}

const caseKey = (subject: BenchSubject, benchCase: BenchCase): string => `${subject.id}|${benchCase.workers}|${benchCase.processes}|${benchCase.shape}`;

/**
 * Share of the measured time during which someone held the lock: the sections' hold times over the
 * window (they never overlap). 1 would mean hand-overs cost nothing.
 */
function utilization(result: ContendResult, elapsed: number): number {
  const held = result.sections.reduce((sum, section) => sum + (section.releasedAt - section.acquiredAt), 0);
  return round(Math.min(1, held / elapsed), 3);
}

function summarise(subject: BenchSubject, benchCase: BenchCase, result: ContendResult, elapsed: number): BenchRow {
  const { handoffP50Ms, reacquireShare } = handoffFigures(result.sections);
  return {
    id: subject.id,
    subject: subject.subject,
    floor: subject.floor,
    protocolFloor: subject.protocolFloor,
    ...(subject.baseline ? { baseline: subject.baseline } : {}),
    ours: subject.ours,
    backend: subject.backend,
    case: benchCase.name,
    shape: benchCase.shape,
    workers: benchCase.workers,
    processes: benchCase.processes,
    ...(benchCase.holdMs > 0 ? { holdMs: benchCase.holdMs, utilization: utilization(result, elapsed) } : {}),
    ...(subject.permits !== undefined ? { permits: subject.permits } : {}),
    csPerSec: Math.round((result.inWindow / elapsed) * 1000),
    waitP50Ms: round(quantile(result.waits, 0.5), 2),
    waitP99Ms: round(quantile(result.waits, 0.99), 2),
    worstWorkerWaitP99Ms: round(Math.max(0, ...result.workerWaitP99), 2),
    handoffP50Ms: benchCase.workers > 1 ? handoffP50Ms : 0,
    fairness: benchCase.workers > 1 ? fairness(result.perWorker) : 1,
    reacquireShare: benchCase.workers > 1 ? reacquireShare : 0,
    failures: result.failures,
    violations: result.violations,
    durationMs: Math.round(elapsed),
    settings: subject.settings,
  };
}

/**
 * How long the processes of a multi-process case contend before its window: a fresh process runs its first
 * seconds in the JIT's slower tiers, the library's fair Redis lock for about 5 s at 4 × 8 instances
 * (`bench/results/sections-over-time.md`). In-process cases run in one long-lived process, warmed up per turn.
 */
const MULTI_PROCESS_WARM_UP_MS = 5_000;

/** The multi-process case of one subject, summarised. */
async function runMultiProcessRow(subject: BenchSubject, benchCase: BenchCase, durationMs: number, warmUpMs: number): Promise<BenchRow> {
  const { result, elapsed } = await runMultiProcess(subject, benchCase.workers, benchCase.processes, durationMs, benchCase, warmUpMs);
  return summarise(subject, benchCase, result, elapsed);
}

function versionOf(pkg: string): string {
  try {
    return (JSON.parse(readFileSync(join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'not installed';
  }
}

/**
 * Whether a subject runs a case. Separate instances, across processes or not, need a lock that lives in
 * a server (an in-process lock per instance would let everyone in); floors measured only uncontended stay so.
 */
function takes(subject: BenchSubject, benchCase: BenchCase): boolean {
  if (subject.uncontendedOnly && benchCase.name !== 'uncontended') return false;
  if ((benchCase.processes > 1 || benchCase.shape !== 'shared') && !subject.crossProcess) return false;
  return true;
}

async function main(): Promise<void> {
  const { quick, only, shapes, workers, out } = parseArgs(process.argv.slice(2));
  const cases = CASES.filter((benchCase) => (!shapes || shapes.includes(benchCase.shape)) && (!workers || workers.includes(benchCase.workers)));
  const durationMs = quick ? 500 : 4_000;
  const warmUpMs = quick ? 1_000 : MULTI_PROCESS_WARM_UP_MS;
  const subjects = BENCH_SUBJECTS.filter((s) => !only || only.some((name) => s.id === name || s.subject === name || s.backend === name || s.subject.startsWith(name)));
  const optimistic = OPTIMISTIC_SUBJECTS.filter((s) => !only || only.some((name) => s.subject === name || name === 'mysql' || s.subject.startsWith(name)));
  const topologies = [...new Set([...subjects.map((s) => TOPOLOGY_OF[s.backend]), ...(optimistic.length ? (['mariadb'] as const) : [])].filter((t): t is TopologyName => t !== undefined))];
  const started = Date.now();
  // A PostgreSQL the benchmark starts keeps fsync on, as MariaDB keeps its durability: commits cost the same kind of flush.
  process.env.LOCK_SERVICES_DURABLE = '1';
  const running = await Promise.all(topologies.map((t) => startTopology(t)));
  const rows: BenchRow[] = [];
  try {
    // First, on each backend, every in-process case of all its subjects in turns (see caseInTurns); the
    // uncontended turns also warm every server up before its contended cases. Each case is summarised
    // at once and its sections dropped: kept to the end, the fast backends' millions of section records
    // had the process at 2.2 GB resident while the later backends ran, and collecting a heap that size
    // can cost a subject in proportion to what it allocates (the library's more than a raw floor's).
    const inTurns = new Map<string, BenchRow>();
    const inProcessCases = cases.filter((benchCase) => benchCase.processes === 1 && !(quick && benchCase.workers === 2));
    for (const backend of new Set(subjects.map((subject) => subject.backend))) {
      for (const benchCase of inProcessCases) {
        const taking = subjects.filter((subject) => subject.backend === backend && takes(subject, benchCase));
        if (taking.length === 0) continue;
        const measured = await caseInTurns(taking, benchCase.workers, durationMs, benchCase.shape);
        for (const [subject, { result, elapsed }] of measured) inTurns.set(caseKey(subject, benchCase), summarise(subject, benchCase, result, elapsed));
      }
    }
    for (const subject of subjects) {
      for (const benchCase of cases) {
        if (!takes(subject, benchCase)) continue;
        // --quick keeps the cases the targets are set on (1, 8 and 32 workers, 4 processes).
        if (quick && benchCase.workers === 2) continue;
        const row = inTurns.get(caseKey(subject, benchCase)) ?? (await runMultiProcessRow(subject, benchCase, durationMs, warmUpMs));
        rows.push(row);
        process.stdout.write(
          `${row.id.padEnd(46)} ${`${row.shape} ${row.workers}w/${row.processes}p`.padEnd(22)} ${String(row.csPerSec).padStart(7)} cs/s  p99 ${String(row.waitP99Ms).padStart(8)} ms  fair ${row.fairness}  reacq ${row.reacquireShare}  fail ${row.failures}  viol ${row.violations}${row.utilization !== undefined ? `  util ${row.utilization}` : ''}\n`,
        );
      }
    }
    const optimisticAlone = optimistic.length > 0 ? await uncontendedUpdatesInTurns(optimistic, durationMs) : new Map<unknown, BenchRow>();
    for (const subject of optimistic) {
      for (const workers of quick ? [1, 8, 32] : [1, 2, 8, 32]) {
        const row = (workers === 1 ? optimisticAlone.get(subject) : undefined) ?? (await runOptimistic(subject, workers, durationMs));
        rows.push(row);
        process.stdout.write(`${row.subject.padEnd(46)} ${`${row.case} ${row.workers}w/1p`.padEnd(20)} ${String(row.csPerSec).padStart(7)} upd/s  p99 ${String(row.waitP99Ms).padStart(8)} ms  conflicts ${row.failures}  lost ${row.violations}\n`);
      }
    }
  } finally {
    for (const topology of running) if (topology.managed) await stopTopology(topology.name);
    if (process.env.BENCH_SQLITE_PATH) for (const suffix of ['', '-wal', '-shm']) rmSync(`${process.env.BENCH_SQLITE_PATH}${suffix}`, { force: true });
  }
  const meta = {
    date: new Date().toISOString(),
    machine: `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB`,
    node: process.version,
    versions: ['ioredis', 'mysql2', 'pg', 'typeorm', 'node-zookeeper-client', 'etcd3', 'memcache-client', 'redlock', '@sesamecare-oss/redlock', 'redis-semaphore'].map((p) => `${p} ${versionOf(p)}`).join(', '),
    settings: `${quick ? 'quick (no 2-worker case)' : 'full'}: ${durationMs} ms per case after a warm-up (${warmUpMs} ms of contention in the fresh processes of a multi-process case); contended = one key. Shapes: shared = workers of one process share one client (4 processes × 2 workers for the multi-process case); instances = one client per contender; flash-sale = 4 processes × 8 requests sharing their process's client, ${FLASH_SALE_HOLD_MS} ms of work in the lock`,
    'total time': `${Math.round((Date.now() - started) / 1000)} s`,
  };
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(rows, null, 2)}\n`);
  writeFileSync(out.replace(/\.json$/, '.md'), markdown(rows, meta));
  process.stdout.write(`\nwrote ${out} and ${out.replace(/\.json$/, '.md')} (${meta['total time']})\n`);
}

(process.argv.includes('--distance') ? runDistance(process.argv.slice(2)) : main()).catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
