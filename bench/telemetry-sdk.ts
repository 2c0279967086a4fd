// The OpenTelemetry SDK of the "redis-telemetry" subject, set up as an application would (an async
// context manager, a batch span processor, a meter provider with a periodic reader), with exporters that
// discard what they are given: the benchmark measures what recording costs the locks, not a network.
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { MeterProvider, PeriodicExportingMetricReader, type PushMetricExporter } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor, TraceIdRatioBasedSampler, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { OpenTelemetryLockObserver } from '@app/distributed-lock';

const discardSpans: SpanExporter = { export: (_spans, done) => done({ code: 0 }), shutdown: async () => undefined };
const discardMetrics: PushMetricExporter = { export: (_metrics, done) => done({ code: 0 }), forceFlush: async () => undefined, shutdown: async () => undefined };

/**
 * Which spans the SDK records (`BENCH_TELEMETRY`): `all` (the default, the SDK's own default sampler:
 * every span), `ratio:<share>` (a trace-id ratio sampler, e.g. `ratio:0.1`), or `metrics` (no tracer
 * provider: metrics only).
 */
export function benchTelemetrySetting(): string {
  return process.env.BENCH_TELEMETRY ?? 'all';
}

let observer: OpenTelemetryLockObserver | undefined;

/** One observer for the process, as one SDK serves an application; metrics collected every 10 s. */
export function benchTelemetryObserver(): OpenTelemetryLockObserver {
  if (!observer) {
    const setting = benchTelemetrySetting();
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    const ratio = /^ratio:([\d.]+)$/.exec(setting);
    if (setting !== 'all' && setting !== 'metrics' && !ratio) throw new Error(`BENCH_TELEMETRY must be all, metrics or ratio:<share>; got "${setting}"`);
    const tracerProvider =
      setting === 'metrics'
        ? trace.getTracerProvider()
        : new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(discardSpans)], ...(ratio ? { sampler: new TraceIdRatioBasedSampler(Number(ratio[1])) } : {}) });
    const meterProvider = new MeterProvider({ readers: [new PeriodicExportingMetricReader({ exporter: discardMetrics, exportIntervalMillis: 10_000 })] });
    observer = new OpenTelemetryLockObserver({ tracerProvider, meterProvider });
  }
  return observer;
}
