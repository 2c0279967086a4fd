// Telemetry cost per lock, uncontended, on the in-memory strategy (no server: the figure is the observer's and
// the SDK's own CPU time per acquire + release, in µs). Usage:
//   BENCH_TELEMETRY=all|metrics|ratio:0.1 node -r @swc-node/register bench/probes/telemetry-cost.ts [iterations] [--cpu-prof …]
// Runs the two loops (no observer; the OpenTelemetry observer with the benchmark's SDK) in turns, on one lock
// service each, and prints µs per acquire + release and their difference. The SDK is installed before both
// loops run, so its async context manager taxes both alike: the difference is the observer's recording.
import { InMemoryLockStrategy, LockManager, LockService } from '@app/distributed-lock';
import { quantile } from '../stats';
import { benchTelemetryObserver, benchTelemetrySetting } from '../telemetry-sdk';

const iterations = Number(process.argv[2] ?? 20_000);
const ROUNDS = 7;

async function loop(service: LockService, key: string, n: number): Promise<number> {
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i += 1) {
    const lock = await service.acquire(key, { waitTimeout: 1_000 });
    await lock.release();
    // A turn of the event loop per lock, as a server round trip gives: the observer's batched writes (a timer)
    // run inside the measured time, as they do beside a real backend.
    await new Promise((resolve) => setImmediate(resolve));
  }
  return Number(process.hrtime.bigint() - started) / 1_000 / n;
}

async function main(): Promise<void> {
  const observer = benchTelemetryObserver();
  const plain = new LockService(new LockManager(new InMemoryLockStrategy()));
  const observed = new LockService(new LockManager(new InMemoryLockStrategy(), { observer }));
  await loop(plain, 'warm-p', iterations / 4);
  await loop(observed, 'warm-o', iterations / 4);
  const figures = { plain: [] as number[], observed: [] as number[] };
  for (let round = 0; round < ROUNDS; round += 1) {
    figures.plain.push(await loop(plain, 'p', iterations));
    figures.observed.push(await loop(observed, 'o', iterations));
  }
  const p = quantile(figures.plain, 0.5);
  const o = quantile(figures.observed, 0.5);
  console.log(`telemetry ${benchTelemetrySetting()}: ${iterations} × ${ROUNDS} rounds; µs per acquire + release, median of rounds`);
  console.log(`  no observer  ${p.toFixed(2)} µs   (rounds: ${figures.plain.map((x) => x.toFixed(2)).join(' ')})`);
  console.log(`  observer     ${o.toFixed(2)} µs   (rounds: ${figures.observed.map((x) => x.toFixed(2)).join(' ')})`);
  console.log(`  difference   ${(o - p).toFixed(2)} µs per lock`);
  process.exit(0);
}

void main();
