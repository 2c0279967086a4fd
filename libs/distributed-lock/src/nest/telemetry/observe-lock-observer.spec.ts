import 'reflect-metadata';
import { Controller, Get, Injectable, Module, Param, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { createObserveModule } from '@nestjs/observe';
import { ObserveCollector } from '../../../../../test/support/observe-collector';
import type { LeaseGrant } from '../../locking/lock-lease';
import { LockService } from '../../locking/lock-service';
import { InMemoryLockStrategy } from '../../strategies/in-memory/in-memory-lock.strategy';
import { LOCK_TELEMETRY } from '../../telemetry/lock-telemetry-names';
import { Locked } from '../decorators/locked.decorator';
import { DistributedLockModule } from '../distributed-lock.module';

const { spans, metrics, attributes: a } = LOCK_TELEMETRY;

@Injectable()
class CartService {
  constructor(readonly locks: LockService) {}

  @Locked('cart:{0}')
  async checkout(cart: string): Promise<string> {
    await new Promise((resolve) => setTimeout(resolve, 5));
    return cart;
  }

  /** Holds a lock of the "flaky" strategy for `ms`, its watchdog renewing it. */
  @Locked('flaky:{0}', { strategy: 'flaky', ttl: 1_200, autoExtend: true })
  async holdFlaky(_key: string, ms: number): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, ms));
  }

  /** On the second strategy: its waits and holds go to its own part of the summaries. */
  @Locked('stock:{0}', { strategy: 'stock' })
  async restock(sku: string): Promise<string> {
    return sku;
  }
}

/** An in-memory strategy whose extensions fail while `failing` is set (a backend that stopped answering). */
class FlakyStrategy extends InMemoryLockStrategy {
  failing = false;
  override async extend(lease: LeaseGrant, ttlMs: number): Promise<LeaseGrant | null> {
    if (this.failing) throw new TypeError('extension failed');
    return super.extend(lease, ttlMs);
  }
}

/** The in-memory strategies of the app, so that a test can take a lock away from its holder. */
const strategies = { carts: new InMemoryLockStrategy(), stock: new InMemoryLockStrategy(), flaky: new FlakyStrategy() };

@Controller()
class CartController {
  constructor(private readonly carts: CartService) {}

  @Get('checkout/:cart')
  checkout(@Param('cart') cart: string): Promise<string> {
    return this.carts.checkout(cart);
  }

  @Get('restock/:sku')
  restock(@Param('sku') sku: string): Promise<string> {
    return this.carts.restock(sku);
  }

  /** Extends its lock once, then loses it (taken away behind its back) while the section still runs. */
  @Get('lose/:cart')
  async lose(@Param('cart') cart: string): Promise<string> {
    await this.carts.locks.withLock(`cart:${cart}`, async (lock) => {
      await lock.extend(5_000);
      strategies.carts.forceRelease(`cart:${cart}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    });
    return 'unexpected';
  }

  /** A wait that the request gives up on (its signal aborts) while another holds the lock. */
  @Get('abort/:cart')
  async abort(@Param('cart') cart: string): Promise<string> {
    await this.carts.locks.withLock(`cart:${cart}`, () => undefined, { signal: AbortSignal.timeout(20), waitTimeout: 5_000 });
    return 'unexpected';
  }

  @Get('busy/:cart')
  async busy(@Param('cart') cart: string): Promise<string> {
    await this.carts.locks.withLock(`cart:${cart}`, () => undefined, { waitTimeout: 20 });
    return 'unexpected';
  }
}

/**
 * NestJS Observe's own SDK, unmodified, in a Nest application whose agent ships to a collector on loopback
 * (its `endpoint` option; no account and no credentials): the locks appear in the request traces it records.
 */
describe('NestJS Observe (real SDK, local collector)', () => {
  const collector = new ObserveCollector();
  let app: INestApplication;
  let base: string;

  beforeAll(async () => {
    const endpoint = await collector.start();
    const { ObserveModule, ObserveInstrument } = createObserveModule();
    @Module({
      imports: [
        ObserveModule.forRoot({ appKey: '', appSecret: '', serviceId: 'lock-test', endpoint, flushInterval: 1_000, runtimeMetrics: false }),
        DistributedLockModule.forRoot({ strategies, defaultStrategy: 'carts', logEvents: false, telemetry: { openTelemetry: false } }),
      ],
      controllers: [CartController],
      providers: [CartService],
    })
    class ShopModule {}
    app = await NestFactory.create(ShopModule, { instrument: ObserveInstrument, logger: false });
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
  }, 30_000);

  afterAll(async () => {
    await app?.close();
    await collector.stop();
  });

  it('records the lock of a @Locked method (its wait and its hold) inside the request trace, and counts it', async () => {
    expect(await (await fetch(`${base}/checkout/c1`)).text()).toBe('c1');
    await collector.waitFor(() => collector.spans().some((span) => span.n === spans.lock));

    const lock = collector.spans().find((span) => span.n === spans.lock && span.operation === '/checkout/:cart');
    expect(lock).toMatchObject({
      o: 'manual',
      t: { [a.strategy]: 'carts', [a.backend]: 'memory', [a.mode]: 'exclusive', [a.outcome]: 'acquired', [a.holdOutcome]: 'released' },
    });
    expect(lock?.t?.[a.keyHash]).toEqual(expect.stringMatching(/^[0-9a-f]{16}$/));
    expect(lock?.t?.[a.fencingToken]).toEqual(expect.any(Number));
    expect(lock?.t?.[a.waitDuration]).toEqual(expect.any(Number));
    expect(lock?.t?.[a.holdDuration]).toBeGreaterThanOrEqual(0.004);
    expect(lock?.d).toBeGreaterThanOrEqual(4);

    await collector.waitFor(() => collector.metric(metrics.acquisitions) !== undefined);
    expect(collector.metric(metrics.acquisitions)?.v).toEqual({ [JSON.stringify({ [a.mode]: 'exclusive', [a.outcome]: 'acquired', [a.strategy]: 'carts' })]: 1 });
    expect(collector.metric(metrics.waitDuration)).toMatchObject({ t: 'summary', ct: { carts: 1 } });
    expect(collector.metric(metrics.holdDuration)).toMatchObject({ t: 'summary', ct: { carts: 1 } });
  }, 30_000);

  it('marks a wait that timed out as failed', async () => {
    const holder = await app.get(LockService).acquire('cart:c2');
    try {
      expect((await fetch(`${base}/busy/c2`)).status).toBe(500);
    } finally {
      await holder.release();
    }
    await collector.waitFor(() => collector.spans().some((span) => span.n === spans.lock && span.t?.[a.outcome] === 'timeout'));
    const timedOut = collector.spans().find((span) => span.n === spans.lock && span.t?.[a.outcome] === 'timeout');
    expect(timedOut?.operation).toBe('/busy/:cart');
    expect(timedOut?.t?.[a.errorType]).toBe('LockAcquireTimeoutError');
    expect(timedOut?.e).toBeTruthy();
    await collector.waitFor(() => Object.keys(collector.metric(metrics.acquisitions)?.v ?? {}).some((label) => label.includes('"timeout"')));
  }, 30_000);

  it('writes no plain key into the span of a failed wait (the key is hashed by default)', async () => {
    const holder = await app.get(LockService).acquire('cart:alice-S3CRET');
    try {
      expect((await fetch(`${base}/busy/alice-S3CRET`)).status).toBe(500);
    } finally {
      await holder.release();
    }
    await collector.waitFor(() => collector.spans().some((span) => span.n === spans.lock && span.operation === '/busy/:cart'));
    const written = JSON.stringify(collector.spans().filter((span) => span.n === spans.lock));
    expect(written).not.toContain('alice-S3CRET');
  }, 30_000);

  it('ends the span of a lock lost mid-section as failed, with its reason, and counts the loss and the extension', async () => {
    expect((await fetch(`${base}/lose/c3`)).status).toBe(500);
    await collector.waitFor(() => collector.spans().some((span) => span.n === spans.lock && span.operation === '/lose/:cart'));
    const lost = collector.spans().find((span) => span.n === spans.lock && span.operation === '/lose/:cart');
    expect(lost?.t).toMatchObject({ [a.outcome]: 'acquired', [a.holdOutcome]: 'lost', [a.lostReason]: expect.any(String) });
    expect(lost?.e).toBeTruthy();
    await collector.waitFor(() => collector.metric(metrics.losses) !== undefined && collector.metric(metrics.extensions) !== undefined);
    expect(Object.entries(collector.metric(metrics.losses)?.v ?? {})).toEqual([[JSON.stringify({ [a.lostReason]: lost?.t?.[a.lostReason], [a.strategy]: 'carts' }), 1]]);
    expect(Object.values(collector.metric(metrics.extensions)?.v ?? {})).toEqual([1]);
  }, 30_000);

  it('marks an aborted wait as failed', async () => {
    const holder = await app.get(LockService).acquire('cart:c4');
    try {
      expect((await fetch(`${base}/abort/c4`)).status).toBe(500);
    } finally {
      await holder.release();
    }
    await collector.waitFor(() => collector.spans().some((span) => span.n === spans.lock && span.operation === '/abort/:cart'));
    const aborted = collector.spans().find((span) => span.n === spans.lock && span.operation === '/abort/:cart');
    expect(aborted?.t).toMatchObject({ [a.outcome]: 'aborted', [a.errorType]: 'LockAcquireAbortedError' });
    expect(aborted?.e).toBeTruthy();
  }, 30_000);

  it('counts a failed background extension by strategy, operation and error type', async () => {
    strategies.flaky.failing = true;
    try {
      // A 1.2 s lease renewed every 400 ms, held for 900 ms: its renewals fail, in the background.
      await app.get(CartService).holdFlaky('f1', 900).catch(() => undefined);
    } finally {
      strategies.flaky.failing = false;
    }
    // The strategy's failure reaches the events as the typed error that wraps it (its cause).
    const label = JSON.stringify({ [a.errorType]: 'LockBackendUnavailableError', [a.operation]: 'extend', [a.strategy]: 'flaky' });
    await collector.waitFor(() => (collector.metric(metrics.backgroundErrors)?.v?.[label] ?? 0) >= 1);
  }, 30_000);

  it('keeps each strategy apart in the summaries when the app has several', async () => {
    expect(await (await fetch(`${base}/restock/s1`)).text()).toBe('s1');
    await collector.waitFor(() => collector.spans().some((span) => span.n === spans.lock && span.operation === '/restock/:sku'));
    expect(collector.spans().find((span) => span.operation === '/restock/:sku' && span.n === spans.lock)?.t).toMatchObject({ [a.strategy]: 'stock', [a.outcome]: 'acquired' });
    await collector.waitFor(() => (collector.metric(metrics.holdDuration)?.ct?.stock ?? 0) >= 1);
    expect(collector.metric(metrics.holdDuration)?.ct).toMatchObject({ stock: 1 });
    // One summary per name, split by the strategies' labels, both declared (each report carries the labels that changed).
    expect(collector.metric(metrics.holdDuration)?.l).toEqual(expect.arrayContaining(['carts', 'stock']));
    expect(collector.metric(metrics.waitDuration)?.l).toEqual(expect.arrayContaining(['carts', 'stock']));
    expect(collector.metric(metrics.waitDuration)?.ct).toMatchObject({ stock: 1 });
  }, 30_000);
});
