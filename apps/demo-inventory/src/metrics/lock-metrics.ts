import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';

/**
 * The shop's OpenTelemetry metrics, read in Prometheus's text format. The exporter is the SDK's pull
 * reader: it opens no port of its own (`preventServerStart`), the shop serves it on `GET /metrics`. The
 * lock module records into `meterProvider` (its `telemetry` option).
 */
@Injectable()
export class LockMetrics implements OnApplicationShutdown {
  readonly exporter = new PrometheusExporter({ preventServerStart: true });
  readonly meterProvider = new MeterProvider({ readers: [this.exporter] });

  async onApplicationShutdown(): Promise<void> {
    await this.meterProvider.shutdown();
  }
}
