// Who gets the lock next, across processes: how often a section follows one of the same instance, of another
// instance of the same process, or of another process, and how long the lock stays free between two sections
// of each kind. Also each process's acquire and release times (p50).
// Usage: node -r @swc-node/register bench/probes/hand-over-runs.ts <subject id> <processes> <instances each> <ms>
// (subject ids as in bench/subjects.ts and bench/peers.ts). Needs the test servers (`npm run services -- up`).
// Times come from process.hrtime, Linux's monotonic clock, which all processes of the machine share, so the
// sections of all processes can be put in one order.
import { fork } from 'node:child_process';
import { BENCH_SUBJECTS } from '../subjects';

interface Section {
  /** When the acquisition resolved and when the release was called, µs of the monotonic clock. */
  readonly start: number;
  readonly end: number;
  readonly instance: number;
}

interface ChildReport {
  readonly sections: Section[];
  readonly acquireP50Us: number;
  readonly releaseP50Us: number;
  /** The process's CPU time (user + system) over the window, in ms. */
  readonly cpuMs: number;
}

const [subjectId = 'redis', processesArg = '4', instancesArg = '8', windowArg = '4000'] = process.argv.slice(2);
const nowUs = (): number => Number(process.hrtime.bigint() / 1000n);
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[values.length >> 1] ?? Number.NaN;

async function child(): Promise<void> {
  const subject = BENCH_SUBJECTS.find((s) => s.id === subjectId);
  if (!subject) throw new Error(`unknown subject ${subjectId}`);
  const locks = await Promise.all(Array.from({ length: Number(instancesArg) }, () => subject.create()));
  const key = process.env.PROBE_KEY as string;
  process.send?.('ready');
  await new Promise<void>((resolve) => process.once('message', () => resolve()));
  const cpuBefore = process.cpuUsage();
  const endAt = Date.now() + Number(windowArg);
  const sections: Section[] = [];
  const acquires: number[] = [];
  const releases: number[] = [];
  await Promise.all(
    locks.map(async (lock, instance) => {
      while (Date.now() < endAt) {
        const asked = nowUs();
        let release: () => Promise<unknown>;
        try {
          release = await lock.acquire(key, 5_000);
        } catch {
          continue;
        }
        const start = nowUs();
        const released = release();
        sections.push({ start, end: nowUs(), instance });
        await released;
        acquires.push(start - asked);
        releases.push(nowUs() - start);
      }
    }),
  );
  const cpu = process.cpuUsage(cpuBefore);
  const report: ChildReport = { sections, acquireP50Us: median(acquires), releaseP50Us: median(releases), cpuMs: (cpu.user + cpu.system) / 1000 };
  // A large report is still on its way when send returns: exiting before it is written would lose it.
  await new Promise<void>((resolve, reject) => process.send?.(report, undefined, undefined, (error) => (error ? reject(error) : resolve())));
  await Promise.all(locks.map((lock) => lock.close()));
  process.exit(0);
}

async function parent(): Promise<void> {
  const env = { ...process.env, PROBE_CHILD: '1', PROBE_KEY: `probe:runs:${process.pid}:${Date.now()}` };
  const children = Array.from({ length: Number(processesArg) }, () => fork(__filename, process.argv.slice(2), { env, execArgv: ['-r', '@swc-node/register'] }));
  await Promise.all(children.map((c) => new Promise((resolve) => c.once('message', resolve))));
  const reports = await Promise.all(
    children.map((c) => {
      c.send('go');
      return new Promise<ChildReport>((resolve) => c.once('message', (message) => resolve(message as ChildReport)));
    }),
  );
  const all = reports.flatMap((report, process) => report.sections.map((section) => ({ ...section, process }))).sort((a, b) => a.start - b.start);
  const kinds = { 'same instance': [] as number[], 'same process, other instance': [] as number[], 'other process': [] as number[] };
  const runs: number[] = [];
  let run = 1;
  for (let i = 1; i < all.length; i++) {
    const [before, after] = [all[i - 1], all[i]];
    const gap = after.start - before.end;
    if (after.process !== before.process) {
      kinds['other process'].push(gap);
      runs.push(run);
      run = 1;
    } else {
      run += 1;
      kinds[after.instance === before.instance ? 'same instance' : 'same process, other instance'].push(gap);
    }
  }
  runs.push(run);
  const sorted = [...runs].sort((a, b) => a - b);
  console.log(`${subjectId} ${processesArg} processes × ${instancesArg} instances: ${all.length} sections, ${Math.round((all.length * 1000) / Number(windowArg))}/s`);
  for (const [kind, gaps] of Object.entries(kinds)) {
    const share = ((gaps.length / Math.max(1, all.length - 1)) * 100).toFixed(1);
    console.log(`  next section ${kind}: ${share} %, lock free between them p50 ${median(gaps).toFixed(0)} µs`);
  }
  console.log(`  sections in a row in one process: p50 ${sorted[sorted.length >> 1]}, p90 ${sorted[Math.floor(sorted.length * 0.9)]}`);
  console.log(`  per process, sections ${reports.map((r) => r.sections.length).join(' / ')}, CPU ${reports.map((r) => r.cpuMs.toFixed(0)).join(' / ')} ms`);
  console.log(`  per process, acquire p50 ${reports.map((r) => r.acquireP50Us.toFixed(0)).join(' / ')} µs, release p50 ${reports.map((r) => r.releaseP50Us.toFixed(0)).join(' / ')} µs`);
}

void (process.env.PROBE_CHILD ? child() : parent());
