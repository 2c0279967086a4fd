import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { demoDataSourceOptions } from '../../apps/demo-inventory/src/app.module';
import { startInstances, stopInstances, type ShopInstance } from '../../scripts/demo/instances';
import { runFlashSale } from '../../scripts/demo/flash-sale';
import type { Hold } from '../../apps/demo-inventory/src/inventory/hold-log';
import { PAYMENT_KEY } from '../../apps/demo-inventory/src/payments/payment.service';
import { initializeDataSource } from '../support/initialize-data-source';

/** The shop over HTTP, one instance on SQLite: validation, error mapping, health, metrics. */
describe('shop HTTP API', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shop-e2e-'));
  const sqlitePath = join(dir, 'shop.sqlite');
  let shop: ShopInstance;
  const call = async (method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> => {
    const response = await fetch(`http://127.0.0.1:${shop.port}${path}`, {
      method,
      headers: body === undefined ? undefined : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    await (await initializeDataSource(demoDataSourceOptions({ database: 'sqlite', sqlitePath, mysqlUrl: undefined }, true))).destroy();
    [shop] = await startInstances(1, { DEMO_DATABASE: 'sqlite', DEMO_SQLITE_PATH: sqlitePath, INVENTORY_LOCK: 'row' });
  }, 90_000);

  afterAll(async () => {
    await stopInstances(shop ? [shop] : []);
    rmSync(dir, { recursive: true, force: true });
  });

  it('sells through the lock, reports the fencing token, then answers 409 SOLD_OUT', async () => {
    expect((await call('POST', '/products', { sku: 'e2e-1', name: 'Mug', stock: 1 })).status).toBe(201);
    const bought = await call('POST', '/buy', { sku: 'e2e-1', buyer: 'ann', mode: 'locked' });
    expect(bought.status).toBe(201);
    expect(bought.body).toMatchObject({ strategy: 'row', instance: 'shop-1' });
    expect(typeof bought.body.fencingToken).toBe('number');
    expect(await call('POST', '/buy', { sku: 'e2e-1', buyer: 'bob', mode: 'locked' })).toMatchObject({ status: 409, body: { error: 'SOLD_OUT' } });
  });

  it('rejects bad bodies with 400 and unknown products with 404', async () => {
    expect((await call('POST', '/buy', { sku: 'e2e-1', buyer: 'ann', mode: 'sideways' })).status).toBe(400);
    expect((await call('POST', '/buy', { sku: '../etc', buyer: 'ann', mode: 'locked' })).status).toBe(400);
    expect((await call('POST', '/buy', { sku: 'e2e-1', buyer: 'ann', mode: 'locked', extra: true })).status).toBe(400);
    expect(await call('POST', '/buy', { sku: 'nope', buyer: 'ann', mode: 'locked' })).toMatchObject({ status: 404, body: { error: 'UNKNOWN_PRODUCT' } });
    expect((await call('POST', '/buy', { sku: 'e2e-1', buyer: 'ann', mode: 'pessimistic' })).status).toBe(400);
  });

  it('reports health per lock strategy, and the reports module locks on its own strategy', async () => {
    const health = await call('GET', '/health');
    expect(health.status).toBe(200);
    expect(health.body.info).toMatchObject({ database: { status: 'up' }, 'lock:inventory': { status: 'up', strategy: 'inventory', backend: 'row' }, 'lock:reports': { status: 'up', strategy: 'reports', backend: 'reports-memory' } });
    expect(await call('GET', '/reports/e2e-1')).toMatchObject({ status: 200, body: { sku: 'e2e-1', stock: 0, orders: 1 } });
  });

  it("serves the lock board and the library's operator endpoints it reads, through the app's global ValidationPipe", async () => {
    const page = await fetch(`http://127.0.0.1:${shop.port}/board`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(await page.text()).toContain('/ops/locks');
    const keys = await fetch(`http://127.0.0.1:${shop.port}/board/keys`);
    expect(await keys.json()).toEqual(
      expect.arrayContaining([
        { label: 'stock of e2e-1', key: 'inventory:stock:e2e-1', strategy: 'inventory', kind: 'lock' },
        { label: 'payment calls', key: PAYMENT_KEY, strategy: 'payments', kind: 'semaphore' },
        { label: 'stock report job', key: 'reports:stock-report', strategy: 'inventory', kind: 'lock' },
      ]),
    );
    expect(await call('GET', '/ops/locks?key=inventory:stock:e2e-1&key=reports:stock-report&strategy=inventory')).toEqual({
      status: 200,
      body: {
        strategy: 'inventory',
        locks: [
          { key: 'inventory:stock:e2e-1', held: [], pending: [] },
          { key: 'reports:stock-report', held: [], pending: [] },
        ],
      },
    });
    expect(await call('GET', `/ops/locks/permits?key=${PAYMENT_KEY}&strategy=payments`)).toEqual({
      status: 200,
      body: { strategy: 'payments', semaphores: [{ key: PAYMENT_KEY, permits: null, inUse: 0, held: [], pending: null }] },
    });
    expect((await call('GET', '/ops/locks?strategy=inventory')).status).toBe(400);
    expect((await call('POST', '/ops/locks/break', { key: 'inventory:stock:e2e-1', reason: 'no' })).status).toBe(404);
  });

  it('serves the lock metrics in Prometheus text format on GET /metrics', async () => {
    const response = await fetch(`http://127.0.0.1:${shop.port}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await response.text();
    expect(text).toContain('# TYPE lock_wait_duration histogram');
    expect(text).toContain('# TYPE lock_hold_duration histogram');
    // The locked purchases so far: two of e2e-1 (one sold, one sold out) and the one of an unknown product,
    // which takes the lock before it reads the product.
    expect(text).toMatch(/^lock_acquisitions_total\{lock_strategy="inventory",lock_mode="exclusive",lock_outcome="acquired"[^}]*\} 3$/m);
    expect(text).toMatch(/^lock_wait_duration_bucket\{lock_strategy="inventory",[^}]*le="\+Inf"\} 3$/m);
  });

  it('says when each order took its item, before its payment, and a sale sells out then, not when the last payment answers', async () => {
    expect((await call('POST', '/products', { sku: 'e2e-burst', name: 'Cup', stock: 16 })).status).toBe(201);
    await call('GET', '/holds'); // forget the sections so far
    // Eight orders at once: their payments queue for the semaphore's four permits.
    const bought = await Promise.all(Array.from({ length: 8 }, (_, i) => call('POST', '/buy', { sku: 'e2e-burst', buyer: `b${i}`, mode: 'atomic' })));
    const placed = bought.map((answer) => answer.body.placedAt as number).sort((a, b) => a - b);
    expect(placed.every((at) => typeof at === 'number')).toBe(true);
    const calls = ((await call('GET', '/holds')).body as unknown as Hold[]).filter((hold) => hold.key === PAYMENT_KEY).sort((a, b) => a.startedAt - b.startedAt);
    expect(calls).toHaveLength(8);
    // Each item was taken before its own payment began, so the n-th item taken came before the n-th payment.
    placed.forEach((at, i) => expect(at).toBeLessThanOrEqual(calls[i].startedAt));
    // The sale's sell-out time is when its last item was taken: its payment (15 ms, queued) comes after.
    const outcome = await runFlashSale([shop], { sku: 'e2e-burst', mode: 'atomic', buyers: 8, concurrency: 8 });
    expect(outcome.created).toBe(8);
    expect(outcome.lastOrderAtMs).toBeLessThan(outcome.lastAnswerAtMs);
  });
});
