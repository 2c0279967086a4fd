import { createHash } from 'node:crypto';
import { context, SpanStatusCode, trace } from '@opentelemetry/api';
import { TelemetryRecorder } from '../../../../test/support/telemetry-recorder';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockManager } from '../locking/lock-manager';
import { LockService } from '../locking/lock-service';
import type { LeaseGrant } from '../locking/lock-lease';
import { InMemoryLockStrategy } from '../strategies/in-memory';
import { LOCK_DURATION_BUCKETS, LOCK_TELEMETRY } from './lock-telemetry-names';
import type { OpenTelemetryLockObserverOptions } from './lock-telemetry-options';
import { OpenTelemetryLockObserver } from './open-telemetry-lock-observer';

const { spans, metrics, attributes: a } = LOCK_TELEMETRY;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const durationMs = (span: { duration: [number, number] }): number => span.duration[0] * 1_000 + span.duration[1] / 1e6;

/** An in-memory strategy whose extensions fail while `failing` is set (a backend that stopped answering). */
class FlakyStrategy extends InMemoryLockStrategy {
  failing = false;
  override async extend(lease: LeaseGrant, ttlMs: number): Promise<LeaseGrant | null> {
    if (this.failing) throw new Error('extension failed');
    return super.extend(lease, ttlMs);
  }
}

describe('OpenTelemetryLockObserver (real SDK, in-memory strategy)', () => {
  let recorder: TelemetryRecorder;
  let manager: LockManager;
  let locks: LockService;
  let strategy: FlakyStrategy;
  let observer: OpenTelemetryLockObserver;

  const start = (options: OpenTelemetryLockObserverOptions = {}): void => {
    strategy = new FlakyStrategy({ name: 'memory' });
    observer = new OpenTelemetryLockObserver({ tracerProvider: recorder.tracerProvider, meterProvider: recorder.meterProvider, ...options });
    manager = new LockManager(strategy, { name: 'orders', observer });
    locks = new LockService(manager, { keyPrefix: 'shop:' });
  };

  beforeEach(() => {
    recorder = new TelemetryRecorder();
    start();
  });

  afterEach(async () => {
    await manager.close();
    await recorder.shutdown();
  });

  it('traces an acquisition as one span, a child of the caller: the wait, the grant, the hold, the fencing token', async () => {
    const tracer = recorder.tracerProvider.getTracer('test');
    const request = tracer.startSpan('request');
    let token: number | undefined;
    await context.with(trace.setSpan(context.active(), request), async () => {
      await locks.withLock('cart:alice', async (lock) => {
        token = lock.fencingToken;
        tracer.startSpan('inside the section').end();
        await sleep(5);
      });
    });
    request.end();

    await recorder.settled();
    const lock = recorder.span(spans.lock);
    const inside = recorder.span('inside the section');
    expect(lock.attributes).toMatchObject({
      [a.strategy]: 'orders',
      [a.backend]: 'memory',
      [a.mode]: 'exclusive',
      [a.outcome]: 'acquired',
      [a.fencingToken]: token,
      [a.keyHash]: createHash('sha256').update('shop:cart:alice').digest('hex').slice(0, 16),
      [a.holdOutcome]: 'released',
    });
    expect(lock.attributes[a.key]).toBeUndefined();
    expect(lock.events.map((event) => event.name)).toEqual(['lock.granted']);
    // Under the caller's span; the section's own spans nest under it.
    expect(lock.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    expect(inside.parentSpanContext?.spanId).toBe(lock.spanContext().spanId);
    expect(lock.attributes[a.holdDuration]).toBeGreaterThanOrEqual(0.004);
    expect(durationMs(lock)).toBeGreaterThanOrEqual(4);
    expect(lock.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('shows how long a waiter waited and how long it held: "waited 40 ms, held 3 ms"', async () => {
    // Upper bounds come from times this test reads itself, so that a stalled event loop (a loaded machine)
    // lengthens both sides alike: the holder waited at most as long as its acquire() took, and the waiter held
    // at most from the first release's call to the end of its section. A hold counted from the start of the
    // wait would still exceed that by the 40 ms wait.
    const acquireCalledAt = performance.now();
    const first = await locks.acquire('sku-1');
    const acquiredAt = performance.now();
    const waiting = locks.withLock('sku-1', () => sleep(3), { waitTimeout: 5_000 });
    await sleep(40);
    const releaseCalledAt = performance.now();
    await first.release();
    await waiting;
    const endedAt = performance.now();

    // The waiter's span: the grant about 40 ms after its start, then about 3 ms of hold to its end.
    await recorder.settled();
    // The holder was granted first: the lower fencing token (not the shorter wait, which a stall can invert).
    const [holder, waiter] = recorder.spans(spans.lock).sort((x, y) => (x.attributes[a.fencingToken] as number) - (y.attributes[a.fencingToken] as number));
    const [granted] = waiter.events;
    const grantedAfterMs = (granted.time[0] - waiter.startTime[0]) * 1_000 + (granted.time[1] - waiter.startTime[1]) / 1e6;
    expect(granted.name).toBe('lock.granted');
    expect(grantedAfterMs).toBeGreaterThanOrEqual(35);
    expect(durationMs(waiter) - grantedAfterMs).toBeGreaterThanOrEqual(2);
    expect(durationMs(waiter) - grantedAfterMs).toBeLessThanOrEqual(endedAt - releaseCalledAt + 1);
    expect(waiter.attributes[a.waitDuration]).toBeGreaterThanOrEqual(0.035);
    expect(waiter.attributes[a.holdDuration]).toBeGreaterThanOrEqual(0.002);
    // heldMs is a difference of Date.now() readings: up to 1 ms more than the time between them.
    expect(waiter.attributes[a.holdDuration]).toBeLessThanOrEqual((endedAt - releaseCalledAt + 1) / 1_000);
    expect(holder.attributes[a.waitDuration]).toBeLessThanOrEqual((acquiredAt - acquireCalledAt + 1) / 1_000);
    expect(holder.attributes[a.holdDuration]).toBeGreaterThanOrEqual(0.038);

    const wait = await recorder.histogram(metrics.waitDuration, { [a.strategy]: 'orders', [a.outcome]: 'acquired', [a.mode]: 'exclusive' });
    expect(wait.unit).toBe('s');
    expect(wait.count).toBe(2);
    expect(wait.max).toBeGreaterThanOrEqual(0.035);
    expect(wait.max).toBeLessThanOrEqual((endedAt - acquiredAt + 1) / 1_000);
    expect(wait.buckets.boundaries).toEqual(LOCK_DURATION_BUCKETS);
    const held = await recorder.histogram(metrics.holdDuration, { [a.strategy]: 'orders', [a.holdOutcome]: 'released' });
    expect(held.count).toBe(2);
    expect(held.min).toBeGreaterThanOrEqual(0.002);
    expect(await recorder.value(metrics.acquisitions, { [a.strategy]: 'orders', [a.outcome]: 'acquired' })).toBe(2);
  });

  it('counts waiters and held locks while they wait and hold', async () => {
    const first = await locks.acquire('busy');
    const waiting = locks.acquire('busy', { waitTimeout: 5_000 });
    await sleep(10);
    expect(await recorder.value(metrics.waiters, { [a.strategy]: 'orders' })).toBe(1);
    expect(await recorder.value(metrics.held, { [a.strategy]: 'orders' })).toBe(1);
    await first.release();
    const second = await waiting;
    expect(await recorder.value(metrics.waiters, { [a.strategy]: 'orders' })).toBe(0);
    expect(await recorder.value(metrics.held, { [a.strategy]: 'orders' })).toBe(1);
    await second.release();
    expect(await recorder.value(metrics.held, { [a.strategy]: 'orders' })).toBe(0);
  });

  it('records a timeout: an error for acquire, an answer for tryAcquire', async () => {
    const holder = await locks.acquire('sku-2');
    await expect(locks.acquire('sku-2', { waitTimeout: 20 })).rejects.toThrow(/within/);
    expect(await locks.tryAcquire('sku-2')).toBeNull();
    await holder.release();
    await recorder.settled();

    const [thrown, answered] = recorder.spans(spans.lock).filter((span) => span.attributes[a.outcome] === 'timeout');
    expect(thrown.status.code).toBe(SpanStatusCode.ERROR);
    expect(thrown.attributes[a.errorType]).toBe('LockAcquireTimeoutError');
    expect(durationMs(thrown)).toBeGreaterThanOrEqual(15);
    expect(answered.status.code).toBe(SpanStatusCode.UNSET);
    expect(await recorder.value(metrics.acquisitions, { [a.outcome]: 'timeout' })).toBe(2);
    expect((await recorder.histogram(metrics.waitDuration, { [a.outcome]: 'timeout' })).count).toBe(2);
  });

  it('records an aborted wait', async () => {
    const holder = await locks.acquire('sku-3');
    const controller = new AbortController();
    const waiting = locks.acquire('sku-3', { waitTimeout: 5_000, signal: controller.signal });
    await sleep(10);
    controller.abort(new Error('client went away'));
    await expect(waiting).rejects.toThrow(/aborted/);
    await holder.release();

    await recorder.settled();
    const aborted = recorder.span(spans.lock, { [a.outcome]: 'aborted' });
    expect(aborted.status.code).toBe(SpanStatusCode.ERROR);
    expect(aborted.attributes[a.errorType]).toBe('LockAcquireAbortedError');
    // No grant: no event, no hold.
    expect(aborted.events).toEqual([]);
    expect(aborted.attributes[a.holdDuration]).toBeUndefined();
    expect(await recorder.value(metrics.acquisitions, { [a.outcome]: 'aborted' })).toBe(1);
  });

  it('records a loss: the span fails at the loss, with its reason, and the loss is counted', async () => {
    // The manager's listeners run in order: this one after the observer's, so the span's end (the loss as the
    // observer saw it) is no later than lostSeenAt, however late a stalled event loop fired the lease's timer.
    let lostSeenAt = Number.POSITIVE_INFINITY;
    manager.events.on('lost', () => (lostSeenAt = performance.now()));
    const acquireCalledAt = performance.now();
    const lock = await locks.acquire('sku-4', { ttl: 30, autoExtend: false });
    await sleep(80);
    expect(lock.signal.aborted).toBe(true);
    await lock.release();

    await recorder.settled();
    const hold = recorder.span(spans.lock);
    expect(hold.status.code).toBe(SpanStatusCode.ERROR);
    expect(hold.attributes).toMatchObject({ [a.holdOutcome]: 'lost', [a.lostReason]: 'expired' });
    // A grant that lost over a tenth of its 30 ms lease on its way to the caller (a loaded machine: 3 ms) is
    // topped up once (LeaseWatchdog, without auto-extension too): an extension may come between the two.
    const events = hold.events.filter((event) => event.name !== 'lock.extended');
    expect(hold.events.length - events.length).toBeLessThanOrEqual(1);
    expect(events.map((event) => [event.name, event.attributes?.[a.lostReason]])).toEqual([
      ['lock.granted', undefined],
      ['lock.lost', 'expired'],
    ]);
    // Ended at the loss, not at the release 50 ms later.
    expect(lostSeenAt).toBeLessThan(Number.POSITIVE_INFINITY);
    expect(hold.endTime).toEqual(events[1].time);
    expect(durationMs(hold)).toBeLessThanOrEqual(lostSeenAt - acquireCalledAt);
    expect(await recorder.value(metrics.losses, { [a.strategy]: 'orders', [a.lostReason]: 'expired' })).toBe(1);
    expect((await recorder.histogram(metrics.holdDuration, { [a.holdOutcome]: 'lost' })).count).toBe(1);
  });

  it('counts extensions and failed background extensions, with an event on the span', async () => {
    const lock = await locks.acquire('sku-5');
    await lock.extend(60_000);
    strategy.failing = true;
    // Until the first renewal has failed (or, with the assertions below failing, the lease ended): a fixed 50 ms
    // of a 90 ms lease let a stall past its end lose the lock before any renewal was tried. Renewals come every
    // 400 ms of this 1.2 s lease, so a stall of up to 800 ms still leaves one to fail.
    const failedOrLost = new Promise((resolve) => {
      manager.events.once('backgroundError', resolve);
      manager.events.once('lost', resolve);
    });
    const watched = await locks.acquire('sku-6', { ttl: 1_200, autoExtend: true });
    await failedOrLost;
    strategy.failing = false;
    await lock.release();
    await watched.release();

    await recorder.settled();
    expect(await recorder.value(metrics.extensions, { [a.strategy]: 'orders' })).toBeGreaterThanOrEqual(1);
    const extended = recorder.spans(spans.lock).find((span) => span.events.some((event) => event.name === 'lock.extended'));
    expect(extended?.events.find((event) => event.name === 'lock.extended')?.attributes?.[a.expiresAt]).toEqual(expect.any(Number));
    const failures = (await recorder.metrics()).get(metrics.backgroundErrors)?.dataPoints ?? [];
    expect(failures.map((point) => point.attributes)).toEqual([{ [a.strategy]: 'orders', [a.operation]: 'extend', [a.errorType]: expect.any(String) }]);
    expect(failures[0].value).toBeGreaterThanOrEqual(1);
  });

  it('shows the key as asked: plain, through a function, or not at all', async () => {
    await manager.close();
    start({ key: 'plain' });
    await (await locks.acquire('user:42')).release();
    await recorder.settled();
    expect(recorder.span(spans.lock, { [a.key]: 'shop:user:42' }).attributes[a.keyHash]).toBeUndefined();

    await manager.close();
    start({ key: (key) => key.replace(/\d+$/, '{id}') });
    await (await locks.acquire('user:43')).release();
    await recorder.settled();
    expect(recorder.spans(spans.lock).filter((span) => span.attributes[a.key] === 'shop:user:{id}')).toHaveLength(1);

    await manager.close();
    start({
      key: () => {
        throw new Error('a bad key function');
      },
    });
    await (await locks.acquire('user:44')).release();
    await manager.close();
    start({ key: 'omit' });
    await (await locks.acquire('user:45')).release();
    await recorder.settled();
    const last = recorder.spans(spans.lock).slice(-2);
    for (const span of last) {
      expect(span.attributes[a.key]).toBeUndefined();
      expect(span.attributes[a.keyHash]).toBeUndefined();
    }
  });

  it('writes no plain key anywhere in a span unless asked to: not in the status of a timeout or an abort either', async () => {
    const secret = 'cart:alice@example.com:tok_S3CRET';
    const failures = async (): Promise<string> => {
      const holder = await locks.acquire(secret);
      await expect(locks.acquire(secret, { waitTimeout: 20 })).rejects.toThrow(/within/);
      await expect(locks.acquire(secret, { waitTimeout: 5_000, signal: AbortSignal.timeout(15) })).rejects.toThrow(/aborted/);
      await holder.release();
      await recorder.settled();
      const written = recorder.spans(spans.lock).filter((span) => span.attributes[a.outcome] !== 'acquired');
      expect(written).toHaveLength(2);
      for (const span of written) expect(span.status.code).toBe(SpanStatusCode.ERROR);
      return JSON.stringify(written.map((span) => ({ status: span.status, attributes: span.attributes, events: span.events, name: span.name })));
    };
    const hash = createHash('sha256').update(`shop:${secret}`).digest('hex').slice(0, 16);
    const hashed = await failures();
    expect(hashed).not.toContain('alice');
    expect(hashed).toContain(`key#${hash}`);

    for (const key of ['omit', (k: string) => k.replace(/:[^:]+:[^:]+$/, ':{user}:{token}')] as const) {
      await manager.close();
      recorder = new TelemetryRecorder();
      start({ key });
      const written = await failures();
      expect(written).not.toContain('alice');
      expect(written).not.toContain(hash);
    }

    await manager.close();
    recorder = new TelemetryRecorder();
    start({ key: 'plain' });
    expect(await failures()).toContain(secret);
  });

  it('observes a permit as it observes a lock: a span (kind "permit", its size and weight) over the wait and the hold, its section nested, and its figures apart', async () => {
    const tracer = recorder.tracerProvider.getTracer('test');
    await locks.withPermit('payments', async () => {
      tracer.startSpan('inside the permit').end();
      await sleep(2);
    }, { permits: 3, weight: 2 });
    const busy = await locks.acquirePermit('payments', { permits: 3, weight: 3 });
    expect(await locks.tryAcquirePermit('payments', { permits: 3 })).toBeNull();
    await busy.release();
    await recorder.settled();

    const permits = recorder.spans(spans.lock).filter((span) => span.attributes[a.kind] === 'permit');
    expect(permits).toHaveLength(3);
    const first = permits.find((span) => span.attributes[a.weight] === 2);
    expect(first?.attributes).toMatchObject({ [a.mode]: 'shared', [a.permits]: 3, [a.outcome]: 'acquired', [a.holdOutcome]: 'released' });
    expect(recorder.span('inside the permit').parentSpanContext?.spanId).toBe(first?.spanContext().spanId);
    expect(await recorder.value(metrics.acquisitions, { [a.kind]: 'permit', [a.outcome]: 'acquired' })).toBe(2);
    expect(await recorder.value(metrics.acquisitions, { [a.kind]: 'permit', [a.outcome]: 'timeout' })).toBe(1);
    expect((await recorder.histogram(metrics.holdDuration, { [a.kind]: 'permit', [a.holdOutcome]: 'released' })).count).toBe(2);
  });

  it('writes a lock to the SDK once the caller has moved on, or at once on flush()', async () => {
    await (await locks.acquire('later')).release();
    // Still the caller's turn: nothing written yet, so that the lock's latency does not include the SDK's work.
    expect(recorder.spans(spans.lock)).toEqual([]);
    observer.flush();
    expect(recorder.spans(spans.lock)).toHaveLength(1);
    expect((await recorder.histogram(metrics.holdDuration, { [a.strategy]: 'orders' })).count).toBe(1);
    await (await locks.acquire('later')).release();
    await recorder.settled();
    expect(recorder.spans(spans.lock)).toHaveLength(2);
  });

  it('writes what is waiting when the metrics are collected, so that a scrape right after a lock sees it', async () => {
    await (await locks.acquire('scraped')).release();
    // No settled(): the collection itself writes the batch before it reads the histograms.
    expect((await recorder.histogram(metrics.waitDuration, { [a.strategy]: 'orders', [a.outcome]: 'acquired' })).count).toBe(1);
    expect((await recorder.histogram(metrics.holdDuration, { [a.strategy]: 'orders' })).count).toBe(1);
  });

  it('records nothing for a re-entry, which neither waits nor asks the backend', async () => {
    await locks.withLock('outer', () => locks.withLock('outer', () => undefined));
    await recorder.settled();
    expect(recorder.spans(spans.lock)).toHaveLength(1);
    expect(await recorder.value(metrics.acquisitions)).toBe(1);
  });

  it('stops observing a closed manager', async () => {
    await (await locks.acquire('x')).release();
    await manager.close();
    await recorder.settled();
    expect(await recorder.value(metrics.held, { [a.strategy]: 'orders' })).toBe(0);
    expect((await recorder.metrics()).get(metrics.waiters)?.dataPoints ?? []).toEqual([]);
    expect(manager.events.listenerCount('lost')).toBe(0);
  });

  it('refuses bad options before anything is recorded', () => {
    expect(() => new OpenTelemetryLockObserver({ key: 'scrambled' as never })).toThrow(InvalidLockOptionsError);
    expect(() => new OpenTelemetryLockObserver({ tracerProvider: {} as never })).toThrow(/telemetry.tracerProvider/);
    expect(() => new OpenTelemetryLockObserver({ sampler: 1 } as never)).toThrow(/unknown option/);
  });
});
