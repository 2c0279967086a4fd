import 'reflect-metadata';
import { Controller, Get, Injectable, Module, Param, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { createObserveModule } from '@nestjs/observe';
import { ObserveCollector } from '../../../../../test/support/observe-collector';
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
}

@Controller()
class CartController {
  constructor(private readonly carts: CartService) {}

  @Get('checkout/:cart')
  checkout(@Param('cart') cart: string): Promise<string> {
    return this.carts.checkout(cart);
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
        DistributedLockModule.forRoot({ strategies: { carts: new InMemoryLockStrategy() }, logEvents: false, telemetry: { openTelemetry: false } }),
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
});
