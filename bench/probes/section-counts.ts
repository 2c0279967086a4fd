// What one critical section costs the client, counted: socket writes (statements, commands) and timers armed.
// Usage: node -r @swc-node/register bench/probes/section-counts.ts <subject id> [instances] [ms]
// (subject ids as in bench/subjects.ts). The instances contend for one key in this one process; with
// PROBE_TIMER_STACKS=1 it also prints where the timers were armed. Needs the test servers (`npm run services -- up`).
import net from 'node:net';
import { BENCH_SUBJECTS } from '../subjects';
import { contendUntil } from './contend-until';

const [subjectId = 'redis', instancesArg = '1', windowArg = '3000'] = process.argv.slice(2);
const counts = { writes: 0, timers: 0 };
const timerSites = new Map<string, number>();

// Counting wrappers, installed before any client is made.
const write = net.Socket.prototype.write;
net.Socket.prototype.write = function countedWrite(this: net.Socket, ...args: unknown[]): boolean {
  counts.writes += 1;
  return (write as (...a: unknown[]) => boolean).apply(this, args);
} as typeof write;
const arm = globalThis.setTimeout;
globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
  counts.timers += 1;
  if (process.env.PROBE_TIMER_STACKS) {
    const site = (new Error().stack ?? '').split('\n').slice(2, 5).map((line) => line.trim()).join(' < ');
    timerSites.set(site, (timerSites.get(site) ?? 0) + 1);
  }
  return arm(...args);
}) as typeof setTimeout;

async function main(): Promise<void> {
  const subject = BENCH_SUBJECTS.find((s) => s.id === subjectId);
  if (!subject) throw new Error(`no subject ${subjectId}`);
  const locks = await Promise.all(Array.from({ length: Number(instancesArg) }, () => subject.create()));
  await contendUntil(locks, 'section-counts', Date.now() + 1_000); // warm-up: connections, prepared statements
  counts.writes = 0;
  counts.timers = 0;
  timerSites.clear();
  const { sections } = await contendUntil(locks, 'section-counts', Date.now() + Number(windowArg));
  const per = (n: number): string => (n / Math.max(1, sections)).toFixed(2);
  console.log(`${subjectId}, ${instancesArg} instance(s): ${sections} sections; per section: socket writes ${per(counts.writes)}, timers ${per(counts.timers)}`);
  for (const [site, n] of [...timerSites].sort((a, b) => b[1] - a[1]).slice(0, 6)) console.log(`  ${per(n)} timers at ${site}`);
  await Promise.all(locks.map((lock) => lock.close()));
}

void main();
