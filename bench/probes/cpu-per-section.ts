// CPU per critical section across processes: what the clients and the Redis server(s) spend per section.
// Usage: node -r @swc-node/register bench/probes/cpu-per-section.ts <subject id> <processes> <instances each> <ms>
// (subject ids as in bench/subjects.ts or bench/semaphore-subjects.ts; Redis ports to read `INFO cpu` from in PROBE_REDIS_PORTS, default 16379;
// PROBE_WARM_UP_MS: how long the children contend before the window, unmeasured, default 5000: a fresh process
// runs its first seconds in the JIT's slower tiers, see bench/results/sections-over-time.md).
// Each child process runs its instances in a loop on one key; the parent sums the children's cpuUsage and the
// servers' used_cpu_user + used_cpu_sys over the window. Needs the test servers (`npm run services -- up`).
// PROBE_CPU_PROF_DIR=<dir> writes each child's CPU profile there (node --cpu-prof).
import { execFileSync, fork } from 'node:child_process';
import { contendUntil, probeLocks } from './contend-until';

interface ChildReport {
  readonly sections: number;
  readonly gaveUp: number;
  readonly cpuSeconds: number;
}

const [subjectId = 'redis', processesArg = '4', instancesArg = '8', windowArg = '3000'] = process.argv.slice(2);
const processes = Number(processesArg);
const instances = Number(instancesArg);
const windowMs = Number(windowArg);
const redisPorts = (process.env.PROBE_REDIS_PORTS ?? '16379').split(',');
const warmUpMs = Number(process.env.PROBE_WARM_UP_MS ?? 5_000);

function redisCpuSeconds(): number {
  return redisPorts.reduce((sum, port) => {
    const info = execFileSync('redis-cli', ['-p', port, 'info', 'cpu'], { encoding: 'utf8' });
    const read = (name: string): number => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
    return sum + read('used_cpu_user') + read('used_cpu_sys');
  }, 0);
}

async function child(): Promise<void> {
  const locks = await probeLocks(subjectId, instances);
  const key = process.env.PROBE_KEY as string;
  process.send?.('ready');
  const startAt = await new Promise<number>((resolve) => process.once('message', (at) => resolve(at as number)));
  const measureFrom = startAt + warmUpMs;
  let before = process.cpuUsage();
  const mark = setTimeout(() => (before = process.cpuUsage()), Math.max(0, measureFrom - Date.now()));
  const { sections, gaveUp } = await contendUntil(locks, key, measureFrom + windowMs, measureFrom);
  clearTimeout(mark);
  const used = process.cpuUsage(before);
  const report: ChildReport = { sections, gaveUp, cpuSeconds: (used.user + used.system) / 1e6 };
  process.send?.(report);
  await Promise.all(locks.map((lock) => lock.close()));
  process.exit(0);
}

async function parent(): Promise<void> {
  const env = { ...process.env, PROBE_CHILD: '1', PROBE_KEY: `probe:${process.pid}:${Date.now()}` };
  const profileDir = process.env.PROBE_CPU_PROF_DIR;
  const execArgv = ['-r', '@swc-node/register', ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [])];
  const children = Array.from({ length: processes }, () => fork(__filename, process.argv.slice(2), { env, execArgv }));
  await Promise.all(children.map((c) => new Promise((resolve) => c.once('message', resolve))));
  const startAt = Date.now() + 50;
  let serverBefore = redisCpuSeconds();
  const mark = setTimeout(() => (serverBefore = redisCpuSeconds()), startAt + warmUpMs - Date.now());
  const reports = await Promise.all(
    children.map((c) => {
      c.send(startAt);
      return new Promise<ChildReport>((resolve) => c.once('message', (message) => resolve(message as ChildReport)));
    }),
  );
  clearTimeout(mark);
  const serverSeconds = redisCpuSeconds() - serverBefore;
  const sections = reports.reduce((sum, r) => sum + r.sections, 0);
  const clientSeconds = reports.reduce((sum, r) => sum + r.cpuSeconds, 0);
  const gaveUp = reports.reduce((sum, r) => sum + r.gaveUp, 0);
  const perSection = (seconds: number): string => ((seconds / sections) * 1e6).toFixed(0);
  console.log(
    `${subjectId} ${processes} processes × ${instances} instances: ${Math.round(sections / (windowMs / 1000))} sections/s; ` +
      `per section: clients ${perSection(clientSeconds)} µs, Redis ${perSection(serverSeconds)} µs` +
      (gaveUp > 0 ? `; ${gaveUp} acquisitions gave up and were asked again` : ''),
  );
}

void (process.env.PROBE_CHILD ? child() : parent());
