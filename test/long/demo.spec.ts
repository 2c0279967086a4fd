import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { DemoResultRow } from '../../scripts/demo/demo-result';
import type { StockReportSummary } from '../../scripts/demo/stock-report-demo';
import { launchChromium } from '../support/chromium';

const ROOT = resolve(__dirname, '..', '..');

/** Runs `npm run demo` with arguments; bounded, returns its exit code and output. */
function runDemo(args: string[], timeoutMs: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolvePromise) => {
    const child = spawn(process.execPath, ['-r', '@swc-node/register', 'scripts/demo/run-demo.ts', ...args], { cwd: ROOT, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, output });
    });
  });
}

describe('the flash-sale demo', () => {
  const out = mkdtempSync(join(tmpdir(), 'demo-e2e-'));
  let rows: DemoResultRow[];

  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it('embedded default (3 instances on one SQLite file): the unguarded sale oversells, every guarded one sells exactly the stock', async () => {
    const { code, output } = await runDemo(['--out', out, '--buyers', '400', '--stock', '40'], 180_000);
    expect(output).toContain('every guarded strategy: 0 oversold');
    expect(code).toBe(0);
    rows = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as DemoResultRow[];
    expect(rows.map((row) => row.strategy)).toEqual(['unguarded', 'atomic', 'row', 'optimistic']);
    // The payment step: one call per order, never more at once than the semaphore's permits, in every sale.
    expect(output).toContain('payments: at most');
    for (const row of rows) {
      expect(row.paymentCalls).toBe(row.orders);
      expect(row.paymentPeak).toBeGreaterThan(0);
      expect(row.paymentPeak).toBeLessThanOrEqual(row.paymentPermits);
    }
    const unguarded = rows[0];
    // The baseline shows the check can fail: without a guard, items are sold twice.
    expect(unguarded.oversold).toBeGreaterThan(0);
    expect(unguarded.invariantHolds).toBe(false);
    for (const row of rows.slice(1)) {
      expect(row).toMatchObject({ oversold: 0, orders: 40, finalStock: 0, initialStock: 40, invariantHolds: true, errors: 0 });
      expect(row.ordersPerSec).toBeGreaterThan(0);
      expect(row.sellOutMs).toBeGreaterThan(0);
      // The lock's utilization: a share of the sale's time for a locked sale, none without a lock.
      if (row.mode === 'locked') {
        expect(row.utilization).toSatisfy((share: number) => share > 0 && share <= 1);
        expect(row.utilizationWholeRun).toSatisfy((share: number) => share > 0 && share <= 1);
      } else {
        expect(row.utilization).toBeNull();
        expect(row.utilizationWholeRun).toBeNull();
      }
      expect(row.p99Ms).toBeGreaterThanOrEqual(row.p50Ms);
    }
    // The scheduled stock report: once per tick across the instances, and it moved off the killed one.
    const jobs = JSON.parse(readFileSync(join(out, 'stock-report.json'), 'utf8')) as StockReportSummary;
    expect(jobs.ticks.length).toBeGreaterThanOrEqual(8);
    expect(jobs.doubleRuns).toBe(0);
    expect(jobs.movedTo).toMatch(/^shop-/);
    expect(jobs.movedTo).not.toBe(jobs.killed.instance);
    expect(jobs.movedAfterMs).toBeLessThanOrEqual(3_000 + 1_500);
    expect(jobs.ticks.filter((tick) => tick.tick > jobs.killed.at).flatMap((tick) => tick.instances)).not.toContain(jobs.killed.instance);
  }, 200_000);

  it('renders its report with charts in headless Chromium', async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      await page.goto(pathToFileURL(join(out, 'report.html')).href);
      expect(await page.locator('svg.chart').count()).toBe(3);
      const throughputBars = page.locator('#throughput rect.bar');
      expect(await throughputBars.count()).toBe(rows.length);
      for (let i = 0; i < rows.length; i += 1) {
        const box = await throughputBars.nth(i).boundingBox();
        expect(box?.width ?? 0).toBeGreaterThan(0);
      }
      expect(await page.locator('#latency rect.bar').count()).toBe(rows.length * 2);
      const oversoldUnguarded = await page.locator('#oversold rect.bar[data-strategy="unguarded"]').boundingBox();
      expect(oversoldUnguarded?.width ?? 0).toBeGreaterThan(0);
      expect(await page.locator('tr.bad').count()).toBe(1);
      const jobs = JSON.parse(readFileSync(join(out, 'stock-report.json'), 'utf8')) as StockReportSummary;
      expect(await page.locator('#stock-report-ticks tr.tick').count()).toBe(jobs.ticks.length);
      expect(await page.locator('#stock-report-ticks td.killed').count()).toBe(1);
      // The timeline: every sale's sections drawn; the locked ones never overlap, the unguarded one does.
      expect(await page.locator('svg.timeline').count()).toBe(rows.length);
      expect(await page.locator('#timeline-row rect.hold[data-kind="lock"]').count()).toBeGreaterThan(0);
      expect(await page.locator('#timeline-row rect.overlap').count()).toBe(0);
      expect(await page.locator('#timeline-unguarded rect.overlap').count()).toBeGreaterThan(0);
      const hold = await page.locator('#timeline-row rect.hold').first().boundingBox();
      expect(hold?.width ?? 0).toBeGreaterThan(0);
      // The concurrent payment calls: one chart per sale, each with its limit line, none crossing it.
      expect(await page.locator('svg.payments').count()).toBe(rows.length);
      expect(await page.locator('svg.payments line.limit').count()).toBe(rows.length);
      for (const row of rows) expect(await page.locator(`#payments-${row.strategy}`).getAttribute('data-peak')).toBe(String(row.paymentPeak));
      expect(await page.getByText('LIMIT CROSSED').count()).toBe(0);
      // The lock waits, read from the shops' GET /metrics: one line for the one locked sale, every buyer's wait in it.
      const waits = JSON.parse(readFileSync(join(out, 'lock-waits.json'), 'utf8')) as Array<{ strategy: string; total: number; counts: number[] }>;
      expect(waits.map((wait) => [wait.strategy, wait.total])).toEqual([['row', 400]]);
      expect(await page.locator('#lock-waits g.wait-cdf').count()).toBe(1);
      const line = page.locator('#lock-waits g.wait-cdf[data-strategy="row"] polyline');
      expect((await line.boundingBox())?.width ?? 0).toBeGreaterThan(100);
      expect(await page.locator('#lock-waits g.wait-cdf[data-strategy="row"] circle.wait-point').count()).toBe(waits[0].counts.length - 1);
    } finally {
      await browser.close();
    }
  }, 120_000);

  it('over the real servers: MySQL row and pessimistic locks, optimistic versions, Redis, Redlock, ZooKeeper, etcd and the lock-free references never oversell', async () => {
    const serverOut = mkdtempSync(join(tmpdir(), 'demo-e2e-servers-'));
    try {
      const { code, output } = await runDemo(['--strategies', 'row-mysql,pessimistic,optimistic-mysql,atomic-mysql,redis,redlock,zookeeper,etcd,atomic-postgres', '--out', serverOut, '--buyers', '240', '--stock', '24'], 300_000);
      expect(code).toBe(0);
      expect(output).toContain('every guarded strategy: 0 oversold');
      const serverRows = JSON.parse(readFileSync(join(serverOut, 'results.json'), 'utf8')) as DemoResultRow[];
      expect(serverRows.map((row) => row.strategy)).toEqual(['row-mysql', 'pessimistic', 'optimistic-mysql', 'atomic-mysql', 'redis', 'redlock', 'zookeeper', 'etcd', 'atomic-postgres']);
      for (const row of serverRows) {
        expect(row).toMatchObject({ oversold: 0, orders: 24, finalStock: 0, invariantHolds: true, errors: 0, paymentCalls: 24 });
        expect(row.paymentPeak).toBeLessThanOrEqual(row.paymentPermits);
        if (row.mode === 'locked' || row.mode === 'pessimistic') expect(row.utilization).toSatisfy((share: number) => share > 0 && share <= 1);
        else expect(row.utilization).toBeNull();
      }
    } finally {
      rmSync(serverOut, { recursive: true, force: true });
    }
  }, 320_000);
});
