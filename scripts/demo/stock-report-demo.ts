import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { DataSource } from 'typeorm';
import { demoDataSourceOptions } from '../../apps/demo-inventory/src/app.module';
import { startInstances, stopInstances } from './instances';
import type { StockReportLine } from '../../apps/demo-inventory/src/reports/stock-report.job';

/** One tick of the stock report: which instance ran it, and whether it finished. */
export interface StockReportTick {
  readonly tick: number;
  readonly instances: readonly string[];
  readonly finished: boolean;
}

/** What the stock-report phase of the demo showed. */
export interface StockReportSummary {
  readonly instances: readonly string[];
  readonly ticks: readonly StockReportTick[];
  /** Ticks that more than one instance ran (must be 0). */
  readonly doubleRuns: number;
  /** The instance killed in the middle of a report, and when (ms since epoch). */
  readonly killed: { readonly instance: string; readonly at: number };
  /** The first run after the kill: by whom, and how long after the kill it started (the lock's lease at most, then the next tick). */
  readonly movedTo: string | undefined;
  readonly movedAfterMs: number | undefined;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The scheduled job across the shop's instances: `count` instances write a stock report every second,
 * once per tick; after `beforeKillMs` the instance in the middle of a report is killed (SIGKILL), and the
 * others run on for `afterKillMs`. Reads back who ran which tick.
 */
export async function runStockReportDemo(settings: { sqlitePath: string; count: number; beforeKillMs?: number; afterKillMs?: number }): Promise<StockReportSummary> {
  const log = `${settings.sqlitePath}.stock-report.jsonl`;
  writeFileSync(log, '');
  // The schema (the app's own tables; the lock table is made by the strategy).
  await (await new DataSource(demoDataSourceOptions({ database: 'sqlite', sqlitePath: settings.sqlitePath, mysqlUrl: undefined }, true)).initialize()).destroy();
  const env = { DEMO_DATABASE: 'sqlite', DEMO_SQLITE_PATH: settings.sqlitePath, INVENTORY_LOCK: 'row', DEMO_SYNC: '0', DEMO_STOCK_REPORT_LOG: log };
  const instances = await startInstances(settings.count, env);
  const lines = (): StockReportLine[] =>
    readFileSync(log, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((text) => JSON.parse(text) as StockReportLine);
  let killed: StockReportSummary['killed'];
  try {
    await sleep(settings.beforeKillMs ?? 4_500);
    // Kill whoever is writing a report right now (started, not finished): the job must move.
    const deadline = Date.now() + 5_000;
    let running: StockReportLine | undefined;
    while (!running && Date.now() < deadline) {
      const all = lines();
      running = all.filter((line) => line.kind === 'start').find((start) => !all.some((end) => end.kind === 'end' && end.tick === start.tick && end.instance === start.instance) && Date.now() - start.at < 200);
      if (!running) await sleep(10);
    }
    const victim = instances.find((instance) => instance.name === (running?.instance ?? instances[0].name)) ?? instances[0];
    victim.child.kill('SIGKILL');
    killed = { instance: victim.name, at: Date.now() };
    await sleep(settings.afterKillMs ?? 6_000);
  } finally {
    await stopInstances(instances);
  }
  const all = lines();
  rmSync(log, { force: true });
  const byTick = new Map<number, { instances: string[]; finished: boolean }>();
  for (const line of all) {
    const tick = byTick.get(line.tick) ?? { instances: [], finished: false };
    if (line.kind === 'start') tick.instances.push(line.instance);
    else tick.finished = true;
    byTick.set(line.tick, tick);
  }
  const ticks = [...byTick].sort(([a], [b]) => a - b).map(([tick, value]) => ({ tick, ...value }));
  const after = all.filter((line) => line.kind === 'start' && line.at > killed.at).sort((a, b) => a.at - b.at)[0];
  return {
    instances: instances.map((instance) => instance.name),
    ticks,
    doubleRuns: ticks.filter((tick) => tick.instances.length > 1).length,
    killed,
    movedTo: after?.instance,
    movedAfterMs: after ? after.at - killed.at : undefined,
  };
}

/** The phase in a few lines for the terminal. */
export function renderStockReportText(summary: StockReportSummary): string {
  const note = (tick: StockReportTick): string => (tick.finished ? '' : tick.instances.includes(summary.killed.instance) ? ' (killed)' : ' (stopped)');
  const runs = summary.ticks.map((tick) => `${new Date(tick.tick).toISOString().slice(11, 19)} ${tick.instances.join('+')}${note(tick)}`);
  return [
    `scheduled stock report (@Cron every second + @ScheduledLock, ${summary.instances.length} instances):`,
    `  ${runs.join(' · ')}`,
    `  ${summary.ticks.length} ticks, ${summary.doubleRuns} run twice; ${summary.killed.instance} killed mid-report, ` +
      `next report by ${summary.movedTo ?? 'nobody'}${summary.movedAfterMs === undefined ? '' : ` ${(summary.movedAfterMs / 1000).toFixed(1)} s later (lease 3 s)`}`,
  ].join('\n');
}

const escape = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The phase as a section of the HTML report: one row per tick, one column per instance. */
export function renderStockReportHtml(summary: StockReportSummary): string {
  const head = `<tr><th>tick</th>${summary.instances.map((name) => `<th>${escape(name)}</th>`).join('')}</tr>`;
  const rows = summary.ticks
    .map((tick) => {
      const cells = summary.instances.map((name) => {
        if (!tick.instances.includes(name)) return '<td></td>';
        const killedHere = name === summary.killed.instance && !tick.finished;
        return `<td class="ran${killedHere ? ' killed' : ''}">${killedHere ? 'killed mid-report' : 'report'}</td>`;
      });
      return `<tr class="tick${tick.instances.length > 1 ? ' bad' : ''}" data-tick="${tick.tick}"><td>${new Date(tick.tick).toISOString().slice(11, 19)}</td>${cells.join('')}</tr>`;
    })
    .join('');
  return `<h2 id="stock-report">Scheduled stock report: once per tick</h2>
<p>Every instance schedules <code>@Cron('* * * * * *')</code> with <code>@ScheduledLock({ lockAtMostFor: 3_000, lockAtLeastFor: 500 })</code>; the one that takes the lock writes the report, the others skip that tick.
${summary.ticks.length} ticks, <b>${summary.doubleRuns}</b> run twice. <b>${escape(summary.killed.instance)}</b> was killed in the middle of a report;
the next one was written by <b>${escape(summary.movedTo ?? 'nobody')}</b>${summary.movedAfterMs === undefined ? '' : `, ${(summary.movedAfterMs / 1000).toFixed(1)} s later (its lock's lease, 3 s, then the next tick)`}.</p>
<table id="stock-report-ticks"><thead>${head}</thead><tbody>${rows}</tbody></table>`;
}
