import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { metrics, trace } from '@opentelemetry/api';
import { TelemetryRecorder } from '../../../../../test/support/telemetry-recorder';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { LockService } from '../../locking/lock-service';
import { InMemoryLockStrategy } from '../../strategies/in-memory/in-memory-lock.strategy';
import { LOCK_TELEMETRY } from '../../telemetry/lock-telemetry-names';
import { Locked } from '../decorators/locked.decorator';
import type { DistributedLockModuleOptions } from '../distributed-lock-options.interface';
import { DistributedLockModule } from '../distributed-lock.module';

const { spans, metrics: names, attributes: a } = LOCK_TELEMETRY;

@Injectable()
class CheckoutService {
  @Locked('cart:{0}')
  async checkout(cart: string): Promise<string> {
    trace.getTracer('app').startSpan('charge card').end();
    return cart;
  }
}

async function app(options: Omit<DistributedLockModuleOptions, 'strategies'>): Promise<TestingModule> {
  const moduleRef = await Test.createTestingModule({
    imports: [DistributedLockModule.forRoot({ strategies: { carts: new InMemoryLockStrategy() }, logEvents: false, ...options })],
    providers: [CheckoutService],
  }).compile();
  await moduleRef.init();
  return moduleRef;
}

describe('DistributedLockModule telemetry', () => {
  let recorder: TelemetryRecorder;

  beforeEach(() => {
    recorder = new TelemetryRecorder();
  });

  afterEach(async () => {
    await recorder.shutdown();
  });

  it('is off by default: no span, no metric', async () => {
    trace.setGlobalTracerProvider(recorder.tracerProvider);
    metrics.setGlobalMeterProvider(recorder.meterProvider);
    const moduleRef = await app({});
    try {
      await moduleRef.get(CheckoutService).checkout('c1');
      await recorder.settled();
      expect(recorder.spans(spans.lock)).toEqual([]);
      expect((await recorder.metrics()).size).toBe(0);
    } finally {
      await moduleRef.close();
      trace.disable();
      metrics.disable();
    }
  });

  it('telemetry: true reports @Locked methods through the global providers, the method traced under the lock span', async () => {
    trace.setGlobalTracerProvider(recorder.tracerProvider);
    metrics.setGlobalMeterProvider(recorder.meterProvider);
    const moduleRef = await app({ telemetry: true });
    try {
      await moduleRef.get(CheckoutService).checkout('c1');
      await recorder.settled();
      const lock = recorder.span(spans.lock, { [a.strategy]: 'carts', [a.backend]: 'memory' });
      expect(recorder.span('charge card').parentSpanContext?.spanId).toBe(lock.spanContext().spanId);
      expect(lock.attributes[a.keyHash]).toEqual(expect.stringMatching(/^[0-9a-f]{16}$/));
      expect(await recorder.value(names.acquisitions, { [a.strategy]: 'carts', [a.outcome]: 'acquired' })).toBe(1);
    } finally {
      await moduleRef.close();
      trace.disable();
      metrics.disable();
    }
  });

  it('takes providers and a key setting in the options, for every strategy of the module', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        DistributedLockModule.forRootAsync({
          useFactory: () => ({
            strategies: { default: new InMemoryLockStrategy(), jobs: new InMemoryLockStrategy() },
            logEvents: false,
            telemetry: { tracerProvider: recorder.tracerProvider, meterProvider: recorder.meterProvider, key: 'plain' },
          }),
        }),
      ],
    }).compile();
    await moduleRef.init();
    try {
      await (await moduleRef.get(LockService).acquire('a')).release();
      await moduleRef.get(LockService).withLock('b', () => undefined);
      await recorder.settled();
      expect(recorder.spans(spans.lock).map((span) => span.attributes[a.key])).toEqual(['a', 'b']);
      expect(await recorder.value(names.held, { [a.strategy]: 'jobs' })).toBe(0);
      expect(await recorder.value(names.acquisitions, { [a.strategy]: 'default' })).toBe(2);
    } finally {
      await moduleRef.close();
    }
  });

  it('refuses a bad telemetry option at module creation', async () => {
    for (const [telemetry, option] of [
      ['yes', 'telemetry'],
      [{ key: 'clear' }, 'telemetry.key'],
      [{ observe: 'auto' }, 'telemetry.observe'],
      [{ openTelemetry: false, observe: false }, 'telemetry'],
      [{ exporter: 'otlp' }, 'telemetry.exporter'],
    ] as const) {
      const error = await app({ telemetry: telemetry as never }).then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(error).toBeInstanceOf(InvalidLockOptionsError);
      expect((error as InvalidLockOptionsError).option).toBe(option);
    }
  });

  it('with observe: true, fails the bootstrap when NestJS Observe is not registered', async () => {
    await expect(app({ telemetry: { observe: true, tracerProvider: recorder.tracerProvider, meterProvider: recorder.meterProvider } })).rejects.toThrow(
      /TracerService is not in the application/,
    );
  });
});
