import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

/** One node of a trace tree as NestJS Observe ships it (single-letter keys: name, origin, tags, error, children). */
export interface ObserveSpanNode {
  readonly n?: string;
  readonly o?: 'auto' | 'manual';
  readonly c?: string;
  readonly m?: string;
  readonly t?: Record<string, string | number | boolean>;
  readonly e?: unknown;
  readonly d?: number;
  readonly ch?: ObserveSpanNode[];
}

/** One custom metric as Observe ships it: name, type, values by label. */
export interface ObserveCustomMetric {
  readonly n: string;
  readonly t: 'counter' | 'gauge' | 'summary';
  readonly v?: Record<string, number>;
  readonly ct?: Record<string, number>;
  readonly sm?: Record<string, number>;
  /** The labels a summary is split by. */
  readonly l?: readonly string[];
}

interface ObserveBatch {
  readonly snapshots?: Array<{ readonly op?: string; readonly t?: ObserveSpanNode[] }>;
  readonly custom?: ObserveCustomMetric[];
}

/**
 * A stand-in for NestJS Observe's collector on loopback: it accepts the agent's gzipped batches at
 * `/applications/telemetry` (the agent is pointed at it with its `endpoint` option; no account, no
 * credentials) and keeps them for the test to read.
 */
export class ObserveCollector {
  private readonly batches: ObserveBatch[] = [];
  private readonly server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.url === '/applications/telemetry') this.batches.push(JSON.parse(gunzipSync(Buffer.concat(chunks)).toString('utf8')) as ObserveBatch);
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{}');
    });
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Every span node received, depth first, with the operation (route) of its trace. */
  spans(): Array<ObserveSpanNode & { readonly operation: string | undefined }> {
    const found: Array<ObserveSpanNode & { readonly operation: string | undefined }> = [];
    const walk = (node: ObserveSpanNode, operation: string | undefined): void => {
      found.push({ ...node, operation });
      for (const child of node.ch ?? []) walk(child, operation);
    };
    for (const batch of this.batches) for (const snapshot of batch.snapshots ?? []) for (const root of snapshot.t ?? []) walk(root, snapshot.op);
    return found;
  }

  /** The latest report of the custom metric `name`. */
  metric(name: string): ObserveCustomMetric | undefined {
    let latest: ObserveCustomMetric | undefined;
    for (const batch of this.batches) for (const metric of batch.custom ?? []) if (metric.n === name) latest = { ...latest, ...metric };
    return latest;
  }

  /** Waits (up to `timeoutMs`) until `check` holds for what has arrived. */
  async waitFor(check: () => boolean, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`the collector did not receive what was expected within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
