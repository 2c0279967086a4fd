import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { demoDataSourceOptions } from '../../apps/demo-inventory/src/app.module';
import { Product } from '../../apps/demo-inventory/src/inventory/product.entity';
import { PAYMENT_KEY, PAYMENT_PERMITS } from '../../apps/demo-inventory/src/payments/payment.service';
import { runFlashSale } from '../../scripts/demo/flash-sale';
import { startInstances, stopInstances, type ShopInstance } from '../../scripts/demo/instances';
import { launchChromium } from '../support/chromium';
import { initializeDataSource } from '../support/initialize-data-source';

/**
 * The demo's live lock board (GET /board on any shop instance) during a real flash sale: three shop
 * processes on the embedded SQLite file, the stock guarded by the lock table, and the scheduled stock
 * report running. The board must show the stock lock's holder (one of the shops, with its fencing token and
 * lease) and the shops waiting behind it, and the payment semaphore's places taken by the shops, as the
 * library's `GET /ops/locks` and `GET /ops/locks/permits` answer.
 * LOCK_BOARD_SCREENSHOT=<file> keeps the screenshot (docs/images/lock-board.png comes from such a run).
 */
describe('the live lock board', () => {
  const out = mkdtempSync(join(tmpdir(), 'lock-board-'));
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it('shows the stock lock held by one shop, its token and lease, the shops waiting, the payment permits and the job lock, in headless Chromium', async () => {
    const sqlitePath = join(out, 'board.sqlite');
    const data = await initializeDataSource(demoDataSourceOptions({ database: 'sqlite', sqlitePath, mysqlUrl: undefined }, true));
    await data.getRepository(Product).save({ sku: 'flash-board', name: 'Board item', stock: 400, lastFence: 0 });
    await data.destroy();
    const jobs = join(out, 'stock-report.jsonl');
    writeFileSync(jobs, '');
    let instances: ShopInstance[] = [];
    const browser = await launchChromium();
    try {
      instances = await startInstances(3, { DEMO_DATABASE: 'sqlite', DEMO_SQLITE_PATH: sqlitePath, INVENTORY_LOCK: 'row', DEMO_SYNC: '0', DEMO_STOCK_REPORT_LOG: jobs });
      const page = await browser.newPage({ viewport: { width: 1100, height: 640 } });
      await page.goto(`http://127.0.0.1:${instances[0].port}/board`);
      const sale = runFlashSale(instances, { sku: 'flash-board', mode: 'locked', buyers: 1_200, concurrency: 48 });
      // Freeze the board, inside the page in one task, the first time it shows the stock lock held with a
      // line waiting behind it.
      // (A string: it runs in the page, whose DOM this file's types do not know.)
      await page.waitForFunction(
        `(() => {
          const stock = document.querySelector('section.lock[data-key="inventory:stock:flash-board"]');
          const payments = document.querySelector('section.semaphore .in-use');
          const caught = stock !== null && stock.querySelector('tr.holder') !== null && stock.querySelectorAll('li.waiter').length > 0 && payments !== null && payments.textContent !== '0';
          if (caught) window.boardFrozen = true;
          return caught;
        })()`,
        undefined,
        { timeout: 30_000, polling: 20 },
      );
      const screenshot = process.env.LOCK_BOARD_SCREENSHOT ?? join(out, 'lock-board.png');
      await page.screenshot({ path: screenshot, fullPage: true });
      expect(statSync(screenshot).size).toBeGreaterThan(10_000);

      const stock = page.locator('section.lock[data-key="inventory:stock:flash-board"]');
      const pids = instances.map((instance) => instance.child.pid);
      const holder = stock.locator('tr.holder');
      expect(await holder.count()).toBe(1);
      const owner = (await holder.getAttribute('data-owner')) as string;
      // host:pid:instance:uuid: each shop names itself (instanceName), and the board leads with that name.
      const [host, pid, instanceName] = owner.split(':');
      expect(host).toBe(hostname());
      expect(pids).toContain(Number(pid));
      expect(instances.map((instance) => instance.name)).toContain(instanceName);
      expect(await holder.locator('td').nth(1).textContent()).toBe(`${instanceName} (${hostname()} pid ${pid})`);
      expect(await holder.locator('td.token').textContent()).toMatch(/^\d{10,}$/);
      expect((await holder.locator('.lease .bar span').boundingBox())?.width ?? 0).toBeGreaterThan(0);
      expect(await stock.locator('.state').textContent()).toBe('held');
      // The shops waiting in the lock table's queue: other instances than the holder, each listed once.
      const waiters = (await stock.locator('li.waiter').allTextContents()).map((line) => Number(/pid (\d+)/.exec(line)?.[1]));
      expect(waiters.length).toBeGreaterThan(0);
      for (const waiter of waiters) expect(pids.filter((p) => p !== Number(pid))).toContain(waiter);
      expect(new Set(waiters).size).toBe(waiters.length);
      // The payment step's semaphore: the places taken, each by a shop, never more than its size.
      const payments = page.locator(`section.semaphore[data-key="${PAYMENT_KEY}"]`);
      const inUse = Number(await payments.locator('.in-use').textContent());
      expect(inUse).toBeGreaterThan(0);
      expect(inUse).toBeLessThanOrEqual(PAYMENT_PERMITS);
      expect(await payments.locator('.place.taken').count()).toBe(inUse);
      expect(await payments.locator('.place').count()).toBe(PAYMENT_PERMITS);
      const payers = await payments.locator('tr.holder').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-owner') as string));
      expect(payers.length).toBe(inUse);
      for (const payer of payers) expect(pids).toContain(Number(payer.split(':')[1]));
      // The scheduled job's lock has its card, held or free.
      expect(await page.locator('section.lock[data-key="reports:stock-report"] .state').count()).toBe(1);

      const outcome = await sale;
      expect(outcome.created).toBe(400);
    } finally {
      await browser.close();
      await stopInstances(instances);
    }
  }, 120_000);
});
