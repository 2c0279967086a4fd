import { DataSource } from 'typeorm';
import { demoDataSourceOptions } from '../../apps/demo-inventory/src/app.module';
import type { DemoDatabase } from '../../apps/demo-inventory/src/config/demo-config';
import { Order } from '../../apps/demo-inventory/src/inventory/order.entity';
import { Product } from '../../apps/demo-inventory/src/inventory/product.entity';
import { quantile, type DemoResultRow } from './demo-result';
import { runFlashSale, type SaleOutcome } from './flash-sale';
import { startInstances, stopInstances, type ShopInstance } from './instances';
import { bucketsBetween, scrapeWaitBuckets, waitDistribution, type WaitDistribution } from './lock-wait-metrics';
import type { Hold } from '../../apps/demo-inventory/src/inventory/hold-log';
import type { SaleRun } from './sale-plan';
import type { SaleTimeline } from './timeline-svg';
import { peakConcurrency } from './concurrency';
import type { PaymentTimeline } from './payments-svg';
import { PAYMENT_KEY, PAYMENT_PERMITS } from '../../apps/demo-inventory/src/payments/payment.service';

export interface SaleSettings {
  readonly buyers: number;
  readonly stock: number;
  readonly instances: number;
  readonly sqlitePath: string;
}

export interface SaleHooks {
  /** Called after each buyer's answer with how many have answered. */
  readonly onProgress?: (done: number) => void;
  /** Server addresses for the shop processes and the check (e.g. a fault test's own servers). */
  readonly env?: NodeJS.ProcessEnv;
  /**
   * Awaited after the shops stop and before the books are read: a fault test passes the restart it
   * started, since a sale can end while the database is still coming back.
   */
  readonly beforeCheck?: () => Promise<void>;
}

/**
 * One sale: a fresh product with `stock` items, `instances` shop processes guarded as `run` says, `buyers`
 * concurrent purchases, then the books checked against the stock: orders must equal the items deducted,
 * never more than the stock.
 */
export async function runSale(
  run: SaleRun,
  settings: SaleSettings,
  hooks: SaleHooks = {},
): Promise<{ row: DemoResultRow; outcome: SaleOutcome; timeline: SaleTimeline; waits: WaitDistribution | undefined; payments: PaymentTimeline }> {
  const env: NodeJS.ProcessEnv = {
    ...hooks.env,
    DEMO_DATABASE: run.database,
    DEMO_SQLITE_PATH: settings.sqlitePath,
    INVENTORY_LOCK: run.inventoryLock,
    DEMO_SYNC: '0',
  };
  const mysqlUrl = hooks.env?.LOCK_TEST_MYSQL_URL ?? process.env.LOCK_TEST_MYSQL_URL;
  const postgresUrl = hooks.env?.LOCK_TEST_POSTGRES_URL ?? process.env.LOCK_TEST_POSTGRES_URL;
  const dbConfig = { database: run.database as DemoDatabase, sqlitePath: settings.sqlitePath, mysqlUrl, postgresUrl };
  const data = await new DataSource(demoDataSourceOptions(dbConfig, true)).initialize();
  const sku = `flash-${run.name}`;
  try {
    await data.getRepository(Order).delete({ sku });
    await data.getRepository(Product).delete({ sku });
    await data.getRepository(Product).save({ sku, name: `Flash sale item (${run.name})`, stock: settings.stock, lastFence: 0 });
    const instances = await startInstances(settings.instances, env);
    let outcome: SaleOutcome;
    let conflicts = 0;
    let holds: Hold[] = [];
    let calls: Hold[] = [];
    let saleStartedAt = Date.now();
    let waits: WaitDistribution | undefined;
    // The lock strategy the purchases take (the pessimistic module has its own); none for the unlocked modes.
    const lockStrategies = run.mode === 'locked' ? ['inventory'] : run.mode === 'pessimistic' ? ['pessimistic'] : [];
    try {
      for (const instance of instances) await fetch(`http://127.0.0.1:${instance.port}/holds`); // forget the start-up's
      const waitsBefore = lockStrategies.length ? await scrapeWaitBuckets(instances, lockStrategies) : undefined;
      saleStartedAt = Date.now();
      outcome = await runFlashSale(instances, { sku, mode: run.mode, buyers: settings.buyers, concurrency: 48, onProgress: hooks.onProgress });
      ({ holds, calls } = await sectionsOfSale(instances, sku));
      if (waitsBefore) waits = waitDistribution(run.name, bucketsBetween(waitsBefore, await scrapeWaitBuckets(instances, lockStrategies)));
      if (run.mode === 'optimistic') {
        for (const instance of instances) {
          const stats = (await (await fetch(`http://127.0.0.1:${instance.port}/stats`)).json()) as { optimisticAttempts: number };
          conflicts += stats.optimisticAttempts;
        }
        conflicts -= settings.buyers;
      }
    } finally {
      await stopInstances(instances);
    }
    await hooks.beforeCheck?.();
    const product = await data.getRepository(Product).findOneByOrFail({ sku });
    const orders = await data.getRepository(Order).countBy({ sku });
    const deducted = settings.stock - product.stock;
    const invariantHolds = orders === deducted && product.stock >= 0 && orders <= settings.stock && outcome.created === orders;
    const row: DemoResultRow = {
      strategy: run.name,
      mode: run.mode,
      database: run.database === 'mysql' ? 'mariadb' : run.database === 'postgres' ? 'postgresql' : 'sqlite',
      instances: settings.instances,
      buyers: settings.buyers,
      initialStock: settings.stock,
      finalStock: product.stock,
      orders,
      oversold: Math.max(0, orders - deducted, orders - settings.stock),
      conflicts: Math.max(0, conflicts),
      rejected: outcome.soldOut,
      errors: outcome.busy + outcome.failed,
      ordersPerSec: Math.round((outcome.created / outcome.durationMs) * 1000),
      p50Ms: Math.round(quantile(outcome.latenciesMs, 0.5) * 10) / 10,
      p99Ms: Math.round(quantile(outcome.latenciesMs, 0.99) * 10) / 10,
      durationMs: Math.round(outcome.durationMs),
      sellOutMs: Math.round(outcome.lastOrderAtMs),
      lastAnswerMs: Math.round(outcome.lastAnswerAtMs),
      ...lockBusy(run.mode === 'locked' || run.mode === 'pessimistic' ? holds : undefined, saleStartedAt, outcome),
      invariantHolds,
      guarded: run.mode !== 'unguarded',
      paymentCalls: calls.length,
      paymentPeak: peakConcurrency(calls),
      paymentPermits: PAYMENT_PERMITS,
    };
    return {
      row,
      outcome,
      timeline: { strategy: run.name, startedAt: saleStartedAt, durationMs: outcome.durationMs, holds },
      waits,
      payments: { strategy: run.name, startedAt: saleStartedAt, durationMs: outcome.durationMs, permits: PAYMENT_PERMITS, calls },
    };
  } finally {
    await data.destroy();
  }
}

/** The sale's critical sections on its stock, and its payment calls, from every instance. */
async function sectionsOfSale(instances: readonly ShopInstance[], sku: string): Promise<{ holds: Hold[]; calls: Hold[] }> {
  const holds: Hold[] = [];
  const calls: Hold[] = [];
  for (const instance of instances) {
    const reported = (await (await fetch(`http://127.0.0.1:${instance.port}/holds`)).json()) as Hold[];
    holds.push(...reported.filter((hold) => hold.key === `inventory:stock:${sku}`));
    calls.push(...reported.filter((hold) => hold.key === PAYMENT_KEY));
  }
  return { holds, calls };
}

/**
 * How busy the stock lock was (lock holds never overlap): during the sale, from the first hold to the last
 * order, when buyers queue for it; and over the whole run, which goes on with the sold-out buyers' short
 * reads. Null where no lock is taken.
 */
function lockBusy(holds: readonly Hold[] | undefined, saleStartedAt: number, outcome: SaleOutcome): Pick<DemoResultRow, 'utilization' | 'utilizationWholeRun'> {
  if (!holds) return { utilization: null, utilizationWholeRun: null };
  const locked = holds.filter((hold) => hold.kind === 'lock');
  const firstHold = Math.min(...locked.map((hold) => hold.startedAt));
  const lastOrder = saleStartedAt + outcome.lastOrderAtMs;
  return {
    utilization: busyShare(locked, firstHold, lastOrder),
    utilizationWholeRun: busyShare(locked, saleStartedAt, saleStartedAt + outcome.durationMs),
  };
}

/** The share of [from, to] covered by `holds`. */
function busyShare(holds: readonly Hold[], from: number, to: number): number {
  if (!(to > from)) return 0;
  const held = holds.reduce((sum, hold) => sum + Math.max(0, Math.min(hold.endedAt, to) - Math.max(hold.startedAt, from)), 0);
  return Math.round(Math.min(1, held / (to - from)) * 1000) / 1000;
}
