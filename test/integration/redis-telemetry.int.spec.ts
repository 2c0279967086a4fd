import { randomUUID } from 'node:crypto';
import { SpanStatusCode } from '@opentelemetry/api';
import { LOCK_TELEMETRY, LockManager, LockNotHeldError, LockService, OpenTelemetryLockObserver } from '@app/distributed-lock';
import { RedisLockStrategy } from '@app/distributed-lock/strategies/redis';
import { redisLockKeys } from '@app/distributed-lock/strategies/redis/redis-keys';
import { Redis } from 'ioredis';
import { TelemetryRecorder } from '../support/telemetry-recorder';

const { spans, metrics, attributes: a } = LOCK_TELEMETRY;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const durationMs = (span: { duration: [number, number] }): number => span.duration[0] * 1_000 + span.duration[1] / 1e6;
const run = randomUUID().slice(0, 8);

/** The OpenTelemetry observer on a real Redis: two app instances (managers) contending, with the real SDK. */
describe('OpenTelemetry on the Redis strategy', () => {
  const recorder = new TelemetryRecorder();
  const admin = new Redis(process.env.LOCK_TEST_REDIS_URL as string);
  let managers: LockManager[];
  let instances: LockService[];

  beforeAll(() => {
    const observer = new OpenTelemetryLockObserver({ tracerProvider: recorder.tracerProvider, meterProvider: recorder.meterProvider, key: 'plain' });
    managers = ['shop-1', 'shop-2'].map(() => new LockManager(new RedisLockStrategy({ connection: process.env.LOCK_TEST_REDIS_URL as string }), { name: 'redis', observer }));
    instances = managers.map((manager) => new LockService(manager));
  });

  afterAll(async () => {
    await Promise.all(managers.map((manager) => manager.close()));
    admin.disconnect();
    await recorder.shutdown();
  });

  it('records a wait behind another instance, the hold, and the fencing token Redis gave', async () => {
    const key = `otel:${run}:handover`;
    const first = await instances[0].acquire(key);
    const second = instances[1].withLock(key, (lock) => lock.fencingToken, { waitTimeout: 5_000 });
    await sleep(40);
    await first.release();
    const token = await second;
    await recorder.settled();

    const waited = recorder.span(spans.lock, { [a.key]: key, [a.fencingToken]: token });
    expect(waited.attributes).toMatchObject({ [a.strategy]: 'redis', [a.backend]: 'redis', [a.outcome]: 'acquired', [a.holdOutcome]: 'released' });
    expect(waited.attributes[a.waitDuration]).toBeGreaterThanOrEqual(0.035);
    expect(durationMs(waited)).toBeGreaterThanOrEqual(35);
    expect(recorder.spans(spans.lock).filter((span) => span.attributes[a.key] === key)).toHaveLength(2);
    const wait = await recorder.histogram(metrics.waitDuration, { [a.strategy]: 'redis', [a.outcome]: 'acquired' });
    expect(wait.max).toBeGreaterThanOrEqual(0.035);
  });

  it('records a timeout and an abort', async () => {
    const key = `otel:${run}:busy`;
    const holder = await instances[0].acquire(key);
    await expect(instances[1].acquire(key, { waitTimeout: 50 })).rejects.toThrow(/within/);
    const controller = new AbortController();
    const aborted = instances[1].acquire(key, { waitTimeout: 5_000, signal: controller.signal });
    await sleep(30);
    controller.abort();
    await expect(aborted).rejects.toThrow(/aborted/);
    await holder.release();
    await recorder.settled();

    expect(recorder.span(spans.lock, { [a.key]: key, [a.outcome]: 'timeout' }).status.code).toBe(SpanStatusCode.ERROR);
    expect(recorder.span(spans.lock, { [a.key]: key, [a.outcome]: 'aborted' }).attributes[a.errorType]).toBe('LockAcquireAbortedError');
    expect(await recorder.value(metrics.acquisitions, { [a.strategy]: 'redis', [a.outcome]: 'timeout' })).toBe(1);
    expect(await recorder.value(metrics.acquisitions, { [a.strategy]: 'redis', [a.outcome]: 'aborted' })).toBe(1);
  });

  it('records extensions, and a loss when the key was deleted behind the holder', async () => {
    const key = `otel:${run}:lost`;
    const lock = await instances[0].acquire(key);
    await lock.extend(20_000);
    await admin.del(redisLockKeys('dlock:', key).keys[0]);
    await expect(lock.extend(20_000)).rejects.toThrow(LockNotHeldError);
    await lock.release();
    await recorder.settled();

    const lost = recorder.span(spans.lock, { [a.key]: key });
    expect(lost.status.code).toBe(SpanStatusCode.ERROR);
    expect(lost.attributes[a.lostReason]).toBe('extension-refused');
    expect(lost.events.map((event) => event.name)).toEqual(['lock.granted', 'lock.extended', 'lock.lost']);
    expect(await recorder.value(metrics.extensions, { [a.strategy]: 'redis' })).toBeGreaterThanOrEqual(1);
    expect(await recorder.value(metrics.losses, { [a.strategy]: 'redis', [a.lostReason]: 'extension-refused' })).toBe(1);
  });
});
