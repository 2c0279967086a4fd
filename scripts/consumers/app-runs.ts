// Runs of a built consumer app as the docs describe them: the README's quick start over HTTP (two
// instances of one build, 100 increments sent to each), and docs/observability.md's set-up (a lock taken with
// `telemetry: true`, its span on the console, its count on the Prometheus endpoint).
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { envFor, type NodeBinary } from './node-binaries';

const START_TIMEOUT_MS = 60_000;

/** A free TCP port on loopback. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

function collect(child: ChildProcess): { text: () => string } {
  let text = '';
  child.stdout?.on('data', (chunk: Buffer) => (text += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return { text: () => text };
}

async function waitForHttp(url: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the instance exited (${child.exitCode}) before it listened:\n${output().slice(-3_000)}`);
    const answered = await fetch(url).then(
      () => true,
      () => false,
    );
    if (answered) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`nothing listened at ${url} after ${START_TIMEOUT_MS} ms:\n${output().slice(-3_000)}`);
}

/** Sends `count` requests, `parallel` at a time; fails on any answer but 2xx. */
async function post(url: string, count: number, parallel: number): Promise<void> {
  let sent = 0;
  const worker = async (): Promise<void> => {
    while (sent < count) {
      sent += 1;
      const response = await fetch(url, { method: 'POST' });
      if (!response.ok) throw new Error(`POST ${url}: ${response.status} ${await response.text()}`);
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
}

/**
 * The README's quick start, as it says: `npm run start:prod` twice on one build (PORT 1 and 2), 100
 * `POST /counter/<name>` to each, 10 at a time, then `GET /counter/<name>`. Resolves the count read.
 */
export async function quickStartOverHttp(options: { appDir: string; node: NodeBinary; redisUrl: string }): Promise<{ counted: number; expected: number; ms: number }> {
  const name = `quick-start-${process.pid}-${Date.now()}`;
  const ports = [await freePort(), await freePort()];
  const started = Date.now();
  const instances = ports.map((port) =>
    spawn('npm', ['run', 'start:prod'], { cwd: options.appDir, env: envFor(options.node, { PORT: String(port), REDIS_URL: options.redisUrl }), stdio: ['ignore', 'pipe', 'pipe'], detached: true }),
  );
  const outputs = instances.map(collect);
  const redis = new Redis(options.redisUrl);
  try {
    await Promise.all(instances.map((child, i) => waitForHttp(`http://127.0.0.1:${ports[i]}/`, child, outputs[i].text)));
    await Promise.all(ports.map((port) => post(`http://127.0.0.1:${port}/counter/${name}`, 100, 10)));
    const counted = Number(await (await fetch(`http://127.0.0.1:${ports[0]}/counter/${name}`)).text());
    return { counted, expected: 200, ms: Date.now() - started };
  } finally {
    // npm runs node as its child: the process group goes.
    for (const child of instances) if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, 'SIGKILL');
    await redis.del(`consumer:${name}`).catch(() => undefined);
    redis.disconnect();
  }
}

/**
 * docs/observability.md's set-up: `node dist/observed.js` takes a lock with the SDK of `src/telemetry.ts`
 * started. Resolves what shows it was traced and counted: whether the console exporter printed a `lock`
 * span, and the `lock_acquisitions` lines of the Prometheus scrape.
 */
export async function observedRun(options: { appDir: string; node: NodeBinary; redisUrl: string }): Promise<{ lockSpan: boolean; acquisitions: string[] }> {
  const port = await freePort();
  const child = spawn('node', ['dist/observed.js'], {
    cwd: options.appDir,
    env: envFor(options.node, { REDIS_URL: options.redisUrl, METRICS_PORT: String(port), COUNTER_NAME: `observed-${process.pid}-${Date.now()}` }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = collect(child);
  const code = await new Promise<number | null>((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), START_TIMEOUT_MS);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve(status);
    });
  });
  const text = output.text();
  if (code !== 0) throw new Error(`dist/observed.js exited with ${code}:\n${text.slice(-3_000)}`);
  const summary = text.split('\n').find((line) => line.startsWith('{"scraped"'));
  const scraped = summary ? (JSON.parse(summary) as { scraped: string[] }).scraped : [];
  return { lockSpan: /name: 'lock'/.test(text), acquisitions: scraped.filter((line) => line.startsWith('lock_acquisitions')) };
}
