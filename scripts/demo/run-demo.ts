// npm run demo [-- --strategies all|row,redis,…] [--out DIR] [--buyers N] [--stock N] [--instances N]
// Runs the flash sale: several shop instances against one stock, first unguarded, then guarded by each
// strategy; prints a table, writes results.json and report.html, and fails if a guarded run oversold.
import 'reflect-metadata';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ensureDebianPackages, packagesFor, startTopology, stopTopology, type RunningTopology, type TopologyName } from '../services';
import { renderTable, type DemoResultRow } from './demo-result';
import { progressBar } from './progress-bar';
import { renderReportHtml } from './report-html';
import { runSale } from './run-sale';
import { planRuns } from './sale-plan';
import type { SaleTimeline } from './timeline-svg';

function option(name: string, fallback?: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : fallback;
}

async function main(): Promise<void> {
  const started = Date.now();
  const runs = planRuns(option('strategies'));
  const outDir = resolve(option('out', 'demo-report') as string);
  const settings = {
    buyers: Number(option('buyers', '1000')),
    stock: Number(option('stock', '100')),
    instances: Number(option('instances', '3')),
    sqlitePath: join(tmpdir(), `demo-inventory-${process.pid}.sqlite`),
  };
  const topologies = [...new Set(runs.flatMap((run) => run.topologies))] as TopologyName[];
  const running: RunningTopology[] = [];
  const rows: DemoResultRow[] = [];
  const timelines: SaleTimeline[] = [];
  try {
    if (topologies.length) {
      ensureDebianPackages(packagesFor(topologies), (line) => process.stderr.write(`${line}\n`));
      running.push(...(await Promise.all(topologies.map((name) => startTopology(name)))));
      process.stderr.write(`servers: ${running.map((t) => `${t.name}${t.managed ? ` (${t.startupMs} ms)` : ' (yours)'}`).join(', ')}\n`);
    }
    process.stderr.write(`${settings.buyers} buyers, ${settings.stock} items, ${settings.instances} instances per strategy\n`);
    for (const run of runs) {
      const bar = progressBar(run.name, settings.buyers);
      const { row, outcome, timeline } = await runSale(run, settings, { onProgress: (done) => bar.update(done) });
      timelines.push(timeline);
      const odd = Object.entries(outcome.statusCounts).filter(([status]) => status !== '201' && status !== '409 SOLD_OUT');
      bar.finish(`${outcome.created} sold in ${(outcome.durationMs / 1000).toFixed(1)} s${odd.length ? ` (other answers: ${odd.map(([s, n]) => `${n}× ${s}`).join(', ')})` : ''}`);
      rows.push(row);
    }
  } finally {
    for (const topology of running) if (topology.managed) await stopTopology(topology.name);
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${settings.sqlitePath}${suffix}`, { force: true });
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  process.stdout.write(`\n${renderTable(rows)}\n\n`);
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'results.json'), `${JSON.stringify(rows, null, 2)}\n`);
  const violations = rows.filter((row) => row.guarded && !row.invariantHolds);
  const meta = {
    summary: `${settings.buyers} buyers, ${settings.stock} items, ${settings.instances} instances`,
    date: new Date().toISOString(),
    machine: `${cpus().length} cores, Node ${process.version}`,
    'wall time': `${seconds} s`,
  };
  writeFileSync(join(outDir, 'report.html'), renderReportHtml(rows, meta, timelines));
  process.stdout.write(`wrote ${join(outDir, 'results.json')} and ${join(outDir, 'report.html')} in ${seconds} s\n`);
  const unguarded = rows.find((row) => !row.guarded);
  if (unguarded) process.stdout.write(`unguarded: ${unguarded.oversold} items oversold — what the locks prevent.\n`);
  if (violations.length) {
    process.stdout.write(`INVARIANT VIOLATED by ${violations.map((row) => row.strategy).join(', ')}\n`);
    process.exitCode = 1;
  } else {
    process.stdout.write(`every guarded strategy: 0 oversold, orders = initial − final stock.\n`);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
