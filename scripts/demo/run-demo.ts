// npm run demo [-- --strategies all|row,redis,…] [--db sqlite|mysql|postgres] [--out DIR] [--buyers N] [--stock N] [--instances N] [--stock-report off]
// Runs the flash sale: several shop instances against one stock, first unguarded, then guarded by each
// strategy; then the scheduled stock report across the instances, one of them killed mid-report; prints
// a table, writes results.json, stock-report.json and report.html, and fails if a guarded run oversold
// or a tick of the report ran twice.
import 'reflect-metadata';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startTopologies, stopStarted, type RunningTopology, type TopologyName } from '../services';
import { renderTable, type DemoResultRow } from './demo-result';
import { progressBar } from './progress-bar';
import { renderReportHtml } from './report-html';
import type { WaitDistribution } from './lock-wait-metrics';
import { runSale } from './run-sale';
import { planRuns } from './sale-plan';
import type { SaleTimeline } from './timeline-svg';
import { renderStockReportHtml, renderStockReportText, runStockReportDemo, type StockReportSummary } from './stock-report-demo';
import type { PaymentTimeline } from './payments-svg';

function option(name: string, fallback?: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : fallback;
}

async function main(): Promise<void> {
  const started = Date.now();
  const runs = planRuns(option('strategies'), option('db'));
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
  const payments: PaymentTimeline[] = [];
  const waits: WaitDistribution[] = [];
  let stockReport: StockReportSummary | undefined;
  try {
    if (topologies.length) {
      running.push(...(await startTopologies(topologies, (line) => process.stderr.write(`${line}\n`))));
      process.stderr.write(`servers: ${running.map((t) => `${t.name}${t.managed ? ` (${t.startupMs} ms)` : ' (yours)'}`).join(', ')}\n`);
    }
    process.stderr.write(`${settings.buyers} buyers, ${settings.stock} items, ${settings.instances} instances per strategy\n`);
    for (const run of runs) {
      const bar = progressBar(run.name, settings.buyers);
      const { row, outcome, timeline, waits: saleWaits, payments: calls } = await runSale(run, settings, { onProgress: (done) => bar.update(done) });
      timelines.push(timeline);
      if (saleWaits) waits.push(saleWaits);
      payments.push(calls);
      const odd = Object.entries(outcome.statusCounts).filter(([status]) => status !== '201' && status !== '409 SOLD_OUT');
      bar.finish(`${outcome.created} sold in ${(outcome.durationMs / 1000).toFixed(1)} s${odd.length ? ` (other answers: ${odd.map(([s, n]) => `${n}× ${s}`).join(', ')})` : ''}`);
      for (const odd of outcome.oddAnswers) process.stderr.write(`  ${odd}\n`);
      rows.push(row);
    }
    if (option('stock-report', 'on') !== 'off') {
      process.stderr.write(`scheduled stock report: ${settings.instances} instances, one killed mid-report…\n`);
      stockReport = await runStockReportDemo({ sqlitePath: `${settings.sqlitePath}.jobs`, count: settings.instances });
    }
  } finally {
    await stopStarted(running);
    for (const suffix of ['', '-wal', '-shm', '.jobs', '.jobs-wal', '.jobs-shm']) rmSync(`${settings.sqlitePath}${suffix}`, { force: true });
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  process.stdout.write(`\n${renderTable(rows)}\n\n`);
  if (stockReport) process.stdout.write(`${renderStockReportText(stockReport)}\n\n`);
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'results.json'), `${JSON.stringify(rows, null, 2)}\n`);
  const violations = rows.filter((row) => row.guarded && !row.invariantHolds);
  const meta = {
    summary: `${settings.buyers} buyers, ${settings.stock} items, ${settings.instances} instances`,
    date: new Date().toISOString(),
    machine: `${cpus().length} cores, Node ${process.version}`,
    'wall time': `${seconds} s`,
  };
  if (stockReport) writeFileSync(join(outDir, 'stock-report.json'), `${JSON.stringify(stockReport, null, 2)}\n`);
  writeFileSync(join(outDir, 'lock-waits.json'), `${JSON.stringify(waits, (_key, value: unknown) => (value === Infinity ? '+Inf' : value), 2)}\n`);
  writeFileSync(join(outDir, 'report.html'), renderReportHtml(rows, meta, timelines, stockReport ? [renderStockReportHtml(stockReport)] : [], waits, payments));
  process.stdout.write(`wrote ${join(outDir, 'results.json')} and ${join(outDir, 'report.html')} in ${seconds} s\n`);
  const unguarded = rows.find((row) => !row.guarded);
  if (unguarded) process.stdout.write(`unguarded: ${unguarded.oversold} items oversold — what the locks prevent.\n`);
  const jobBroken = stockReport && (stockReport.doubleRuns > 0 || !stockReport.movedTo || stockReport.movedTo === stockReport.killed.instance);
  if (jobBroken) {
    process.stdout.write('SCHEDULED JOB: a tick ran twice, or the job did not move off the killed instance\n');
    process.exitCode = 1;
  }
  const overLimit = rows.filter((row) => row.paymentPeak > row.paymentPermits);
  if (overLimit.length) {
    process.stdout.write(`PAYMENT LIMIT CROSSED in ${overLimit.map((row) => `${row.strategy} (${row.paymentPeak} at once)`).join(', ')}\n`);
    process.exitCode = 1;
  } else {
    process.stdout.write(`payments: at most ${Math.max(0, ...rows.map((row) => row.paymentPeak))} calls at once in every sale, limit ${rows[0]?.paymentPermits ?? '-'}.\n`);
  }
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
