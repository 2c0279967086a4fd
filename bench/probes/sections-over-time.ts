// Sections per interval over a long contended run, across processes: how a contender's rate changes as the run
// goes on (warm-up of the code, of the clients, of the protocol's state), which a short window averages away.
// Usage: node -r @swc-node/register bench/probes/sections-over-time.ts <subject id> <processes> <instances each> <ms> [bucket ms, default 1000]
// (subject ids as in bench/subjects.ts or bench/semaphore-subjects.ts; PROBE_NODE_ARGS: extra node flags for the children, e.g.
// "--max-semi-space-size=32"). Needs the test servers (`npm run services -- up`).
import { fork } from 'node:child_process';
import { contendUntil, probeLocks } from './contend-until';

const [subjectId = 'redis', processesArg = '4', instancesArg = '8', windowArg = '10000', bucketArg = '1000'] = process.argv.slice(2);
const processes = Number(processesArg);
const instances = Number(instancesArg);
const windowMs = Number(windowArg);
const bucketMs = Number(bucketArg);

interface ChildReport {
  /** Sections ended in each bucket. */
  readonly buckets: number[];
  /** CPU (user + system, ms) spent in each bucket. */
  readonly cpuMs: number[];
}

async function child(): Promise<void> {
  const locks = await probeLocks(subjectId, instances);
  const key = process.env.PROBE_KEY as string;
  process.send?.('ready');
  const startAt = await new Promise<number>((resolve) => process.once('message', (at) => resolve(at as number)));
  const endAt = startAt + windowMs;
  const buckets = new Array<number>(Math.ceil(windowMs / bucketMs)).fill(0);
  const cpuMs = new Array<number>(buckets.length).fill(0);
  let lastCpu = process.cpuUsage();
  const sampler = setInterval(() => {
    const used = process.cpuUsage(lastCpu);
    lastCpu = process.cpuUsage();
    const bucket = Math.floor((Date.now() - startAt - 1) / bucketMs);
    if (bucket >= 0 && bucket < cpuMs.length) cpuMs[bucket] += (used.user + used.system) / 1000;
  }, bucketMs);
  await contendUntil(locks, key, endAt, startAt, () => {
    const bucket = Math.floor((Date.now() - startAt) / bucketMs);
    if (bucket < buckets.length) buckets[bucket] += 1;
  });
  clearInterval(sampler);
  process.send?.({ buckets, cpuMs } satisfies ChildReport);
  await Promise.all(locks.map((lock) => lock.close()));
  process.exit(0);
}

async function parent(): Promise<void> {
  const env = { ...process.env, PROBE_CHILD: '1', PROBE_KEY: `probe:${process.pid}:${Date.now()}` };
  const children = Array.from({ length: processes }, () => fork(__filename, process.argv.slice(2), { env, execArgv: ['-r', '@swc-node/register', ...(process.env.PROBE_NODE_ARGS?.split(' ').filter(Boolean) ?? [])] }));
  await Promise.all(children.map((c) => new Promise((resolve) => c.once('message', resolve))));
  const startAt = Date.now() + 50;
  const reports = await Promise.all(
    children.map((c) => {
      c.send(startAt);
      return new Promise<ChildReport>((resolve) => c.once('message', (message) => resolve(message as ChildReport)));
    }),
  );
  const rows = reports[0].buckets.map((_, i) => {
    const sections = reports.reduce((sum, r) => sum + r.buckets[i], 0);
    const cpu = reports.reduce((sum, r) => sum + r.cpuMs[i], 0);
    const perProcess = reports.map((r) => r.buckets[i]).join(' / ');
    return `  ${((i * bucketMs) / 1000).toFixed(1).padStart(5)} s: ${Math.round(sections / (bucketMs / 1000))} sections/s, clients ${sections ? ((cpu * 1000) / sections).toFixed(0) : '-'} µs CPU per section; per process ${perProcess}`;
  });
  console.log(`${subjectId} ${processes} processes × ${instances} instances, ${windowMs} ms in ${bucketMs} ms steps:\n${rows.join('\n')}`);
}

void (process.env.PROBE_CHILD ? child() : parent());
