import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { trace, type Span } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { TelemetryRecorder } from '../../../../../test/support/telemetry-recorder';
import type { LeaderElection } from '../../election/leader-election';
import { InMemoryLockStrategy } from '../../strategies/in-memory/in-memory-lock.strategy';
import { LOCK_TELEMETRY } from '../../telemetry/lock-telemetry-names';
import { InjectLeaderElection } from '../decorators/inject-leader-election.decorator';
import { OnLeadershipGained } from '../decorators/leadership-hooks.decorator';
import { ScheduledLock } from '../decorators/scheduled-lock.decorator';
import { DistributedLockModule } from '../distributed-lock.module';

const { spans, attributes: a } = LOCK_TELEMETRY;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const parentOf = (span: ReadableSpan): string | undefined => span.parentSpanContext?.spanId;
const idOf = (span: ReadableSpan): string => span.spanContext().spanId;
const traceOf = (span: ReadableSpan): string => span.spanContext().traceId;

/** Runs `fn` inside an active span, as a request handler or the bootstrap would: the roots below must not be its children. */
async function inside<T>(recorder: TelemetryRecorder, name: string, fn: () => Promise<T>): Promise<T> {
  return recorder.tracerProvider.getTracer('app').startActiveSpan(name, async (span: Span) => {
    try {
      return await fn();
    } finally {
      span.end();
    }
  });
}

describe('root spans of scheduled runs and elections (telemetry on)', () => {
  let recorder: TelemetryRecorder;
  let app: TestingModule | undefined;

  beforeEach(() => {
    recorder = new TelemetryRecorder();
  });

  afterEach(async () => {
    await app?.close();
    app = undefined;
    await recorder.shutdown();
  });

  it('each scheduled fire is a trace of its own: its lock span under it, and the job’s own spans under the lock’s, ran or skipped', async () => {
    const tracer = recorder.tracerProvider.getTracer('app');
    @Injectable()
    class Reports {
      @ScheduledLock({ lockAtMostFor: 5_000, lockAtLeastFor: 5_000 })
      async nightly(): Promise<void> {
        tracer.startSpan('write report').end();
      }
    }
    app = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy() }, telemetry: { tracerProvider: recorder.tracerProvider, meterProvider: recorder.meterProvider } })],
      providers: [Reports],
    }).compile();
    await app.init();
    const reports = app.get(Reports);
    // Fired while another span is active (a timer set during a traced request keeps that context).
    await inside(recorder, 'request', () => reports.nightly());
    await reports.nightly();
    // The first run's lock is kept for lockAtLeastFor: its span ends when the shutdown releases it.
    await app.close();
    app = undefined;
    await recorder.settled();

    const runs = recorder.spans(spans.scheduledRun);
    expect(runs.map((span) => span.attributes[a.runOutcome])).toEqual(['ran', 'skipped']);
    for (const run of runs) {
      expect(parentOf(run)).toBeUndefined();
      expect(run.attributes[a.job]).toBe('Reports.nightly');
      expect(run.attributes[a.strategy]).toBe('default');
    }
    expect(new Set(runs.map(traceOf)).size).toBe(2);
    expect(traceOf(runs[0])).not.toBe(traceOf(recorder.span('request')));
    const [ran, skipped] = runs;
    const locks = recorder.spans(spans.lock);
    expect(locks.map(parentOf).sort()).toEqual([idOf(ran), idOf(skipped)].sort());
    // The job runs under its lock's hold, as a section of withLock does: its spans nest under the lock's span.
    const ranLock = locks.find((lock) => parentOf(lock) === idOf(ran));
    expect(parentOf(recorder.span('write report'))).toBe(ranLock && idOf(ranLock));
    expect(traceOf(recorder.span('write report'))).toBe(traceOf(ran));
  });

  it('each campaign is a trace of its own, the term included: its lock span and the leadership hooks’ spans under it', async () => {
    const tracer = recorder.tracerProvider.getTracer('app');
    @Injectable()
    class Relay {
      constructor(@InjectLeaderElection('outbox') readonly election: LeaderElection) {}
      @OnLeadershipGained('outbox')
      start(): void {
        tracer.startSpan('start relay').end();
      }
    }
    @Module({ imports: [DistributedLockModule.forFeature({ elections: ['outbox'] })], providers: [Relay] })
    class RelayModule {}
    const moduleRef = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy() }, telemetry: { tracerProvider: recorder.tracerProvider } }), RelayModule],
    }).compile();
    // Campaigns start at bootstrap: here inside an active span, which must not become their parent.
    app = await inside(recorder, 'bootstrap', async () => moduleRef.init());
    const election = app.get(Relay).election;
    for (const deadline = Date.now() + 2_000; !election.isLeader && Date.now() < deadline; ) await sleep(5);
    expect(election.isLeader).toBe(true);
    await app.close();
    app = undefined;
    await recorder.settled();

    const campaign = recorder.span(spans.election, { [a.election]: 'outbox' });
    expect(parentOf(campaign)).toBeUndefined();
    expect(traceOf(campaign)).not.toBe(traceOf(recorder.span('bootstrap')));
    expect(campaign.attributes).toMatchObject({ [a.electionOutcome]: 'led', [a.termEndReason]: 'closed', [a.strategy]: 'default', [a.term]: expect.any(Number) });
    expect(parentOf(recorder.span(spans.lock))).toBe(idOf(campaign));
    expect(parentOf(recorder.span('start relay'))).toBe(idOf(campaign));
  });
});
