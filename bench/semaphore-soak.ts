// npm run soak -- semaphore [--minutes 20 --round-seconds 120 --out FILE]
// The long run of issue 42, item 9: a Redis semaphore of 3 places, 12 contenders in 3 processes, in rounds
// of `round-seconds` during which one process at a time is frozen (SIGSTOP, 5 s, past the 2 s lease of the
// permits: holders and waiters alike) or, once a round, killed and replaced. Every round's history of
// holds, freezes and kills goes through the history checker (test/support/history/check-permits.ts: never
// more than 3 places in use, every loss told). Bounded: fixed rounds until the time cap. Writes its row
// into bench/results/soak.json (subject "redis-semaphore"); exits 1 on any anomaly.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { startTopology, stopTopology } from '../scripts/services';
import { HistoryLog } from '../test/support/history/history-log';
import { runPermitSoak } from '../test/support/permit-soak';

function option(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : fallback;
}

interface SemaphoreSoakRow {
  subject: 'redis-semaphore';
  permits: number;
  processes: number;
  workers: number;
  rounds: number;
  sections: number;
  /** Places in use beyond the size, and other anomalies, found by the history checker. */
  historyHolds: number;
  historyAnomalies: number;
  peakInUse: number;
  freezes: number;
  kills: number;
  frozenHolders: number;
  frozenWaiters: number;
  /** Holds that lost their permit while their process was frozen, told on waking (not counted past the freeze). */
  excused: number;
  lost: number;
  timeouts: number;
  /** Typed errors other than timeouts and losses (a frozen wait's silence watch: "the server did not answer"). */
  otherTyped: number;
  failures: number;
  minutes: number;
}

export async function runSemaphoreSoak(): Promise<void> {
  const capMs = Number(option('minutes', '20')) * 60_000;
  const roundMs = Number(option('round-seconds', '120')) * 1_000;
  const out = resolve(option('out', join(__dirname, 'results', 'soak.json')));
  const running = await startTopology('redis');
  const started = Date.now();
  const row: SemaphoreSoakRow = {
    subject: 'redis-semaphore', permits: 3, processes: 3, workers: 4, rounds: 0, sections: 0, historyHolds: 0, historyAnomalies: 0, peakInUse: 0,
    freezes: 0, kills: 0, frozenHolders: 0, frozenWaiters: 0, excused: 0, lost: 0, timeouts: 0, otherTyped: 0, failures: 0, minutes: 0,
  };
  try {
    while (Date.now() - started + roundMs < capMs || row.rounds === 0) {
      const history = new HistoryLog(join(tmpdir(), `semaphore-soak-${process.pid}-${Date.now()}.jsonl`));
      const outcome = await runPermitSoak({
        key: `soak:semaphore:${Date.now()}`, history, processes: 3, contenders: 4, permits: 3, ttlMs: 2_000, durationMs: roundMs, freezeMs: 5_000, kills: 1,
      });
      row.rounds += 1;
      row.sections += outcome.sections;
      row.historyHolds += outcome.check.holds;
      row.historyAnomalies += outcome.check.anomalies.length;
      row.peakInUse = Math.max(row.peakInUse, outcome.check.peakInUse);
      row.freezes += outcome.freezes;
      row.kills += outcome.kills;
      row.frozenHolders += outcome.frozenHolders;
      row.frozenWaiters += outcome.frozenWaiters;
      row.excused += outcome.check.excused;
      row.lost += outcome.lost;
      row.timeouts += outcome.timeouts;
      row.otherTyped += outcome.otherTyped.length;
      row.failures += outcome.untyped.length + outcome.crashed.length;
      for (const anomaly of outcome.check.anomalies.slice(0, 5)) process.stdout.write(`  anomaly ${anomaly.rule}: ${anomaly.detail}\n`);
      for (const failure of [...outcome.untyped, ...outcome.crashed].slice(0, 5)) process.stdout.write(`  failure: ${failure}\n`);
      for (const error of outcome.otherTyped.slice(0, 3)) process.stdout.write(`  typed error: ${error.slice(0, 200)}\n`);
      // An anomalous round's history is kept for a look.
      if (outcome.check.anomalies.length === 0) rmSync(history.file, { force: true });
      else process.stdout.write(`  history kept: ${history.file}\n`);
      process.stdout.write(
        `round ${row.rounds}: ${row.sections} sections, ${row.freezes} freezes (${row.frozenHolders} holders, ${row.frozenWaiters} waiters), ${row.kills} kills, peak ${row.peakInUse} in use, ${row.historyAnomalies} anomalies  ${((Date.now() - started) / 60_000).toFixed(1)} min\n`,
      );
    }
  } finally {
    if (running.managed) await stopTopology('redis');
  }
  row.minutes = Math.round((Date.now() - started) / 6_000) / 10;
  const earlier = existsSync(out) ? (JSON.parse(readFileSync(out, 'utf8')) as { rows: Array<{ subject: string }> }).rows : [];
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify({ rows: [...earlier.filter((r) => r.subject !== row.subject), { ...row, date: new Date().toISOString() }] }, null, 2)}\n`);
  process.stdout.write(`\nwrote ${out}\n`);
  if (row.historyAnomalies > 0 || row.failures > 0) {
    process.stdout.write('SEMAPHORE OVER ITS SIZE (or failures)\n');
    process.exitCode = 1;
  }
}
