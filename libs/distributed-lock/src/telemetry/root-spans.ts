import type * as OpenTelemetryApi from '@opentelemetry/api';
import { loadPeerDependency } from '../strategies/load-peer-dependency';
import type { TelemetryTracerProvider } from './lock-telemetry-options';
import { LOCK_TELEMETRY } from './lock-telemetry-names';

type Api = typeof OpenTelemetryApi;

/** Attribute values of a root span. */
export type RootSpanAttributes = Readonly<Record<string, string | number | boolean | undefined>>;

/** One root span: a scheduled run, or an election's campaign and term. */
export interface RootSpan {
  /** Runs `fn` with this span active: the locks it takes and what it traces become its children. */
  run<T>(fn: () => T): T;
  /** Ends the span with `attributes`; an `error` marks it failed (`error.type`, status ERROR). */
  end(attributes: RootSpanAttributes, error?: unknown): void;
}

/**
 * Where scheduled runs and election campaigns get a span that starts a trace of its own: a timer fires a job
 * in whatever context was active when it was set (the bootstrap's, a request's), and a campaign runs for the
 * application's life, so without a root of their own their `lock` spans were roots one by one, or children
 * of a request that ended long before. Undefined where telemetry is off.
 */
export interface RootSpans {
  start(name: string, attributes: RootSpanAttributes): RootSpan;
}

/** Root spans through the OpenTelemetry API, on the module's tracer provider (the global one by default). */
export class OpenTelemetryRootSpans implements RootSpans {
  private readonly api: Api;
  private readonly tracer: OpenTelemetryApi.Tracer;

  /** Throws `MissingPeerDependencyError` when `@opentelemetry/api` is not installed. */
  constructor(tracerProvider?: TelemetryTracerProvider) {
    this.api = loadPeerDependency<Api>('@opentelemetry/api', 'telemetry');
    this.tracer = ((tracerProvider as OpenTelemetryApi.TracerProvider | undefined) ?? this.api.trace.getTracerProvider()).getTracer(LOCK_TELEMETRY.scope);
  }

  start(name: string, attributes: RootSpanAttributes): RootSpan {
    const { api } = this;
    const span = this.tracer.startSpan(name, { root: true, kind: api.SpanKind.INTERNAL, attributes: defined(attributes) });
    const active = api.trace.setSpan(api.ROOT_CONTEXT, span);
    let ended = false;
    return {
      run: (fn) => api.context.with(active, fn),
      end: (more, error) => {
        if (ended) return;
        ended = true;
        span.setAttributes(defined(more));
        if (error !== undefined) {
          // The class name only: a message can quote a lock's key, which the `key` setting may hide.
          const type = error instanceof Error ? error.constructor.name : typeof error;
          span.setAttribute(LOCK_TELEMETRY.attributes.errorType, type);
          span.setStatus({ code: api.SpanStatusCode.ERROR, message: type });
        }
        span.end();
      },
    };
  }
}

function defined(attributes: RootSpanAttributes): OpenTelemetryApi.Attributes {
  const result: OpenTelemetryApi.Attributes = {};
  for (const [name, value] of Object.entries(attributes)) if (value !== undefined) result[name] = value;
  return result;
}
