import { context, type SpanStatusCode } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  DataPointType,
  MeterProvider,
  MetricReader,
  type DataPoint,
  type Histogram,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { OBSERVER_WRITE_DELAY_MS } from '../../libs/distributed-lock/src/telemetry/open-telemetry-recorder';

/** A metric reader that exports nothing: the test collects when it wants to look. */
class CollectingReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

type Attributes = Record<string, unknown>;

const matches = (attributes: Attributes, wanted: Attributes): boolean => Object.entries(wanted).every(([name, value]) => attributes[name] === value);

/**
 * OpenTelemetry's real SDK with in-memory exporters, for tests: the spans ended so far and the metric
 * points collected on demand. Registers an AsyncLocalStorage context manager (what a Node SDK does), so that
 * the caller's active span reaches the lock's spans.
 */
export class TelemetryRecorder {
  readonly spanExporter = new InMemorySpanExporter();
  readonly tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(this.spanExporter)] });
  private readonly reader = new CollectingReader();
  readonly meterProvider = new MeterProvider({ readers: [this.reader] });
  private readonly contextManager = new AsyncLocalStorageContextManager();

  constructor() {
    this.contextManager.enable();
    context.setGlobalContextManager(this.contextManager);
  }

  /**
   * Waits until what the lock observers write a little after a lock ends is written (their batch timer,
   * `OBSERVER_WRITE_DELAY_MS`, set before this longer one, fires first): call it before reading spans or
   * histograms.
   */
  async settled(): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, OBSERVER_WRITE_DELAY_MS + 1));
  }

  /** Ended spans, optionally only those named `name`. */
  spans(name?: string): ReadableSpan[] {
    return this.spanExporter.getFinishedSpans().filter((span) => name === undefined || span.name === name);
  }

  /** The one ended span named `name` whose attributes include `wanted`; fails otherwise. */
  span(name: string, wanted: Attributes = {}): ReadableSpan {
    const found = this.spans(name).filter((span) => matches(span.attributes, wanted));
    if (found.length !== 1) throw new Error(`expected one ${name} span with ${JSON.stringify(wanted)}, found ${found.length}`);
    return found[0];
  }

  /** Every metric collected now, by name. */
  async metrics(): Promise<Map<string, MetricData>> {
    const { resourceMetrics, errors } = await this.reader.collect();
    if (errors.length > 0) throw errors[0];
    const byName = new Map<string, MetricData>();
    for (const scope of resourceMetrics.scopeMetrics) for (const metric of scope.metrics) byName.set(metric.descriptor.name, metric);
    return byName;
  }

  /** The value of the sum or gauge point of `name` whose attributes include `wanted` (0 when there is none). */
  async value(name: string, wanted: Attributes = {}): Promise<number> {
    const metric = (await this.metrics()).get(name);
    if (!metric) return 0;
    if (metric.dataPointType === DataPointType.HISTOGRAM || metric.dataPointType === DataPointType.EXPONENTIAL_HISTOGRAM) throw new Error(`${name} is a histogram`);
    const points = (metric.dataPoints as DataPoint<number>[]).filter((point) => matches(point.attributes, wanted));
    return points.reduce((sum, point) => sum + point.value, 0);
  }

  /** The histogram point of `name` whose attributes include `wanted`; fails when there is none or several. */
  async histogram(name: string, wanted: Attributes = {}): Promise<Histogram & { unit: string }> {
    const metric = (await this.metrics()).get(name);
    if (!metric || metric.dataPointType !== DataPointType.HISTOGRAM) throw new Error(`no histogram ${name}`);
    const points = metric.dataPoints.filter((point) => matches(point.attributes, wanted));
    if (points.length !== 1) throw new Error(`expected one ${name} point with ${JSON.stringify(wanted)}, found ${points.length}`);
    return { ...points[0].value, unit: metric.descriptor.unit };
  }

  /** Status code of a span, for readable assertions. */
  static status(span: ReadableSpan): SpanStatusCode {
    return span.status.code;
  }

  async shutdown(): Promise<void> {
    await Promise.all([this.tracerProvider.shutdown(), this.meterProvider.shutdown()]);
    context.disable();
    this.contextManager.disable();
  }
}
