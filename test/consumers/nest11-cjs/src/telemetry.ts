// OpenTelemetry for the whole process: import this file first, before anything else of the application
// (the first line of main.ts: `import './telemetry';`), so that the SDK is registered when the lock
// module starts.
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { ConsoleMetricExporter, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { ConsoleSpanExporter } from '@opentelemetry/sdk-trace';

export const telemetry = new NodeSDK({
  serviceName: 'my-app',
  // Spans to the console. To a collector instead: OTLPTraceExporter from @opentelemetry/exporter-trace-otlp-http.
  traceExporter: new ConsoleSpanExporter(),
  metricReaders: [
    // For Prometheus to scrape, at http://localhost:9464/metrics.
    new PrometheusExporter({ port: Number(process.env.METRICS_PORT ?? 9464) }),
    // And to the console, once a minute.
    new PeriodicExportingMetricReader({ exporter: new ConsoleMetricExporter(), exportIntervalMillis: 60_000 }),
  ],
});
telemetry.start();
