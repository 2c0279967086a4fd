// npm run bench -- --distance [--rtts 0,1,5,20] [--only redis,etcd,...] [--duration MS] [--out FILE]
// Each of our strategies with its server some round-trip time away: a latency proxy (test/support/latency-proxy)
// in front of every server, adding half the RTT each way. Per RTT and strategy: the uncontended acquisition
// (one instance, one key) and the hand-over between two instances contending for one key. The slope of
// latency against RTT is the number of round trips each costs. JSON rows to bench/results/distance.json (or
// --out), a markdown report and an SVG chart next to it.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { envVarOf, startTopology, stopTopology, type RunningTopology, type TopologyName } from '../scripts/services';
import { behindProxies, type LatencyProxy } from '../test/support/latency-proxy';
import type { Backend, BenchLock, BenchSubject } from './bench-subject';
import { contend } from './contend';
import { distanceChart, distanceMarkdown, slopeOf, type DistanceRow } from './distance-report';
import { handoffFigures, quantile, round, wallClockMs } from './stats';
import { BENCH_SUBJECTS } from './subjects';

const TOPOLOGY_OF: Partial<Record<Backend, TopologyName>> = { redis: 'redis', redis5: 'redis5', mysql: 'mariadb', postgres: 'postgres', zookeeper: 'zookeeper', etcd: 'etcd', memcached: 'memcached' };
/** The variable through which a backend's subjects find their servers: its topology's. */
const envOf = (backend: Backend): string | undefined => {
  const topology = TOPOLOGY_OF[backend];
  return topology ? envVarOf(topology) : undefined;
};
const ROOT = resolve(__dirname, '..');
const WARM_UP_MS = 300;

interface DistanceArgs {
  readonly rtts: number[];
  readonly only: string[] | undefined;
  readonly durationMs: number;
  readonly out: string;
}

function parseDistanceArgs(argv: readonly string[]): DistanceArgs {
  const value = (flag: string): string | undefined => {
    const at = argv.indexOf(flag);
    return at >= 0 ? argv[at + 1] : undefined;
  };
  const rtts = (value('--rtts') ?? '0,1,5,20').split(',').map(Number);
  if (rtts.some((rtt) => !Number.isFinite(rtt) || rtt < 0)) throw new Error(`--rtts takes round-trip times in ms, e.g. 0,1,5,20; got ${value('--rtts')}`);
  const durationMs = Number(value('--duration') ?? 1_500);
  if (!Number.isFinite(durationMs) || durationMs < 100) throw new Error(`--duration takes ms (at least 100); got ${value('--duration')}`);
  const out = value('--out');
  return { rtts, only: value('--only')?.split(','), durationMs, out: out ? resolve(out) : join(ROOT, 'bench', 'results', 'distance.json') };
}

/** Our strategies that live in a server (the in-process and SQLite ones have no distance to a server). */
function distanceSubjects(only: readonly string[] | undefined): BenchSubject[] {
  return BENCH_SUBJECTS.filter((subject) => subject.ours && envOf(subject.backend) !== undefined && (!only || only.includes(subject.id) || only.includes(subject.backend)));
}

/** One instance alone on one key: the acquisition's latency, and a whole acquire + release cycle's. */
async function uncontended(lock: BenchLock, key: string, durationMs: number): Promise<{ acquireMs: number; cycleMs: number; samples: number }> {
  const acquires: number[] = [];
  const cycles: number[] = [];
  const warmUntil = wallClockMs() + WARM_UP_MS;
  const endAt = warmUntil + durationMs;
  while (wallClockMs() < endAt) {
    const startedAt = wallClockMs();
    const release = await lock.acquire(key, 10_000);
    const acquiredAt = wallClockMs();
    await release();
    if (startedAt < warmUntil) continue;
    acquires.push(acquiredAt - startedAt);
    cycles.push(wallClockMs() - startedAt);
  }
  return { acquireMs: round(quantile(acquires, 0.5), 2), cycleMs: round(quantile(cycles, 0.5), 2), samples: acquires.length };
}

/** Two instances (own clients and connections) on one key: the hand-over from one to the other. */
async function betweenInstances(locks: readonly BenchLock[], key: string, durationMs: number): Promise<{ handoverMs: number; sections: number; failures: number }> {
  const measureFrom = wallClockMs() + WARM_UP_MS;
  const result = await contend({ lockOf: (w) => locks[w], holdMs: 0 }, key, locks.length, measureFrom + durationMs, { workerPrefix: 'i', waitMs: 10_000, measureFrom });
  // Only the hand-overs from one instance to the other: a re-acquisition by the same one crosses no network.
  const ordered = [...result.sections].sort((a, b) => a.acquiredAt - b.acquiredAt);
  const across = ordered.filter((section, i) => i > 0 && section.worker !== ordered[i - 1].worker);
  const gaps = across.map((section) => {
    const before = ordered[ordered.indexOf(section) - 1];
    return Math.max(0, section.acquiredAt - before.releasedAt);
  });
  const handoverMs = gaps.length > 0 ? quantile(gaps, 0.5) : handoffFigures(result.sections).handoffP50Ms;
  return { handoverMs: round(handoverMs, 2), sections: result.sections.length, failures: result.failures };
}

/** Every server of `backends` behind proxies `rttMs` of round trip away; resolves what puts things back. */
async function atDistance(backends: ReadonlySet<Backend>, rttMs: number): Promise<() => Promise<void>> {
  const proxies: LatencyProxy[] = [];
  const saved: Array<[string, string | undefined]> = [];
  for (const backend of backends) {
    const name = envOf(backend) as string;
    saved.push([name, process.env[name]]);
    process.env[name] = await behindProxies(process.env[name] as string, rttMs / 2, proxies);
  }
  return async () => {
    for (const [name, value] of saved) process.env[name] = value;
    await Promise.all(proxies.map((proxy) => proxy.close()));
  };
}

export async function runDistance(argv: readonly string[]): Promise<void> {
  const { rtts, only, durationMs, out } = parseDistanceArgs(argv);
  const subjects = distanceSubjects(only);
  const backends = new Set(subjects.map((subject) => subject.backend));
  const started = Date.now();
  const topologies = [...new Set([...backends].map((backend) => TOPOLOGY_OF[backend]).filter((t): t is TopologyName => t !== undefined))];
  const running: RunningTopology[] = await Promise.all(topologies.map((topology) => startTopology(topology)));
  const rows: DistanceRow[] = [];
  try {
    for (const rttMs of rtts) {
      const undo = await atDistance(backends, rttMs);
      try {
        for (const subject of subjects) {
          const key = `distance:${process.pid}:${rttMs}:${subject.id}`;
          const alone = await subject.create();
          const pair = [await subject.create(), await subject.create()];
          try {
            const single = await uncontended(alone, `${key}:alone`, durationMs);
            const contended = await betweenInstances(pair, `${key}:pair`, durationMs);
            const row: DistanceRow = { id: subject.id, backend: subject.backend, rttMs, ...single, ...contended };
            rows.push(row);
            process.stdout.write(
              `${`${subject.id} @ ${rttMs} ms`.padEnd(28)} acquire ${String(row.acquireMs).padStart(7)} ms  cycle ${String(row.cycleMs).padStart(7)} ms  hand-over ${String(row.handoverMs).padStart(7)} ms  (${row.samples} / ${row.sections} samples, ${row.failures} failed)\n`,
            );
          } finally {
            await Promise.all([alone, ...pair].map((lock) => lock.close().catch(() => undefined)));
          }
        }
      } finally {
        await undo();
      }
    }
  } finally {
    for (const topology of running) if (topology.managed) await stopTopology(topology.name);
  }
  const ids = [...new Set(rows.map((row) => row.id))];
  const slopes = ids.map((id) => {
    const of = rows.filter((row) => row.id === id);
    return {
      id,
      acquireRoundTrips: round(slopeOf(of.map((row) => [row.rttMs, row.acquireMs])), 2),
      cycleRoundTrips: round(slopeOf(of.map((row) => [row.rttMs, row.cycleMs])), 2),
      handoverRoundTrips: round(slopeOf(of.map((row) => [row.rttMs, row.handoverMs])), 2),
    };
  });
  const meta = {
    date: new Date().toISOString(),
    machine: `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}`,
    node: process.version,
    settings: `added RTT ${rtts.join(', ')} ms (a loopback proxy, half each way); ${durationMs} ms per case after ${WARM_UP_MS} ms of warm-up; p50 of each; hand-over = from one instance's release to the other's grant`,
    'total time': `${Math.round((Date.now() - started) / 1000)} s`,
  };
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify({ meta, rows, slopes }, null, 2)}\n`);
  writeFileSync(out.replace(/\.json$/, '.md'), distanceMarkdown(rows, slopes, meta));
  writeFileSync(out.replace(/\.json$/, '.svg'), distanceChart(rows));
  process.stdout.write(`\nwrote ${out}, its .md and .svg (${meta['total time']})\n`);
}
