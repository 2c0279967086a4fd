// npm run soak [-- --only redis,etcd --sections 100000 --cap-minutes 30 --out FILE]
// npm run soak -- semaphore [--minutes 20]: the Redis semaphore through freezes and kills (bench/semaphore-soak.ts).
// The long run: for each of our cross-process strategies, contended critical sections on one
// key from 4 processes × 2 workers, in rounds of 30 s, until 100,000 sections or the time cap; an overlap
// anywhere (in-process gauge or the exclusive marker file shared by the processes) is a violation, and
// every round's history of holds goes through the history checker (overlaps, token order, untold losses).
// Bounded: every round has a fixed length and each strategy a cap. Meant for a nightly job, not npm test.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { checkHistory } from '../test/support/history/check-history';
import { HistoryLog } from '../test/support/history/history-log';
import { dirname, join, resolve } from 'node:path';
import { startTopology, stopTopology, type TopologyName } from '../scripts/services';
import type { Backend } from './bench-subject';
import { runMultiProcess } from './multi-process';
import { runSemaphoreSoak } from './semaphore-soak';
import { BENCH_SUBJECTS } from './subjects';

const TOPOLOGY_OF: Partial<Record<Backend, TopologyName>> = { redis: 'redis', redis5: 'redis5', mysql: 'mariadb', zookeeper: 'zookeeper', etcd: 'etcd', memcached: 'memcached' };
const ROUND_MS = 30_000;

function option(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : fallback;
}

interface SoakRow {
  subject: string;
  processes: number;
  workers: number;
  sections: number;
  violations: number;
  failures: number;
  /** Holds the history checker read, and what it found wrong (see test/support/history/check-history.ts). */
  historyHolds: number;
  historyAnomalies: number;
  minutes: number;
  reachedTarget: boolean;
}

/** Writes `row` into the results file, replacing an earlier row of the same strategy (others are kept). */
function save(out: string, target: number, row: SoakRow): void {
  const earlier = existsSync(out) ? (JSON.parse(readFileSync(out, 'utf8')) as { rows: Array<SoakRow & { date?: string }> }).rows : [];
  const rows = [...earlier.filter((r) => r.subject !== row.subject), { ...row, date: new Date().toISOString(), target }];
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify({ rows }, null, 2)}\n`);
}

async function main(): Promise<void> {
  if (process.argv[2] === 'semaphore') return runSemaphoreSoak();
  const target = Number(option('sections', '100000'));
  const capMs = Number(option('cap-minutes', '30')) * 60_000;
  const only = process.argv.includes('--only') ? option('only', '').split(',') : undefined;
  const out = resolve(option('out', join(__dirname, 'results', 'soak.json')));
  const subjects = BENCH_SUBJECTS.filter((s) => s.ours && s.crossProcess && (!only || only.includes(s.subject)));
  const rows: SoakRow[] = [];
  for (const subject of subjects) {
    const topology = TOPOLOGY_OF[subject.backend];
    const running = topology ? await startTopology(topology) : undefined;
    const started = Date.now();
    const row: SoakRow = { subject: subject.subject, processes: 4, workers: 8, sections: 0, violations: 0, failures: 0, historyHolds: 0, historyAnomalies: 0, minutes: 0, reachedTarget: false };
    try {
      while (row.sections < target && Date.now() - started < capMs) {
        // Every process of the round records its holds in one history, checked once the round is over.
        const history = new HistoryLog(join(tmpdir(), `soak-history-${process.pid}-${Date.now()}.jsonl`));
        process.env.LOCK_HISTORY_FILE = history.file;
        const { result } = await runMultiProcess(subject, 8, 4, ROUND_MS);
        delete process.env.LOCK_HISTORY_FILE;
        const checked = checkHistory(history.read());
        rmSync(history.file, { force: true });
        row.historyHolds += checked.holds;
        row.historyAnomalies += checked.anomalies.length;
        for (const anomaly of checked.anomalies.slice(0, 5)) process.stdout.write(`  anomaly ${anomaly.rule}: ${anomaly.detail}\n`);
        row.sections += result.sections.length;
        row.violations += result.violations;
        row.failures += result.failures;
        process.stdout.write(`${subject.subject.padEnd(14)} ${String(row.sections).padStart(7)} sections  ${row.violations} violations  ${row.historyAnomalies} anomalies  ${row.failures} failures  ${((Date.now() - started) / 60_000).toFixed(1)} min\n`);
      }
    } finally {
      if (running?.managed && topology) await stopTopology(topology);
    }
    row.minutes = Math.round((Date.now() - started) / 6_000) / 10;
    row.reachedTarget = row.sections >= target;
    rows.push(row);
    save(out, target, row);
  }
  if (process.env.BENCH_SQLITE_PATH) for (const suffix of ['', '-wal', '-shm']) rmSync(`${process.env.BENCH_SQLITE_PATH}${suffix}`, { force: true });
  process.stdout.write(`\nwrote ${out}\n`);
  if (rows.some((row) => row.violations > 0 || row.historyAnomalies > 0)) {
    process.stdout.write('MUTUAL EXCLUSION VIOLATED\n');
    process.exitCode = 1;
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
