import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { InMemoryLockStrategy, LockManager, LockService, OpenTelemetryLockObserver } from '@app/distributed-lock';
import { bucketsBetween, waitBuckets, waitDistribution } from './lock-wait-metrics';
import { waitCdfSvg } from './wait-cdf-svg';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The demo's reading of the lock wait histogram, from what the real SDK's Prometheus exporter serves. */
describe('lock waits from GET /metrics', () => {
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const meterProvider = new MeterProvider({ readers: [exporter] });
  const observer = new OpenTelemetryLockObserver({ meterProvider });
  const inventory = new LockManager(new InMemoryLockStrategy(), { name: 'inventory', observer });
  const reports = new LockManager(new InMemoryLockStrategy(), { name: 'reports', observer });
  const scrape = async (): Promise<string> => {
    observer.flush();
    return new PrometheusSerializer().serialize((await exporter.collect()).resourceMetrics);
  };

  afterAll(async () => {
    await Promise.all([inventory.close(), reports.close()]);
    await meterProvider.shutdown();
  });

  it('sums the buckets of the strategies asked for, over outcomes, and takes the difference between two scrapes', async () => {
    const locks = new LockService(inventory);
    await locks.withLock('warm-up', () => undefined);
    const before = waitBuckets(await scrape(), ['inventory']);
    expect(before.get(Infinity)).toBe(1);

    const holder = await locks.acquire('stock');
    const waiter = locks.withLock('stock', () => undefined);
    expect(await locks.tryAcquire('stock')).toBeNull();
    await sleep(30);
    await holder.release();
    await waiter;
    await new LockService(reports).withLock('stock', () => undefined);

    const sale = bucketsBetween(before, waitBuckets(await scrape(), ['inventory']));
    // The holder's acquisition, the waiter's and the tryAcquire that found the lock held; not the reports'.
    expect(sale.get(Infinity)).toBe(3);
    expect(sale.get(0.01)).toBeLessThan(3);
    const distribution = waitDistribution('row', sale);
    expect(distribution?.bounds.at(-1)).toBe(Infinity);
    expect(distribution?.counts).toEqual([...(distribution?.counts ?? [])].sort((a, b) => a - b));
    expect(waitDistribution('none', bucketsBetween(sale, sale))).toBeUndefined();

    const svg = waitCdfSvg(distribution ? [distribution] : []);
    expect(svg).toContain('data-strategy="row"');
    expect(svg.match(/class="wait-point"/g)).toHaveLength((distribution?.bounds.length ?? 0) - 1);
  });
});
