// What the tracker of a strategy-made etcd client's calls costs (etcd-calls-in-flight.ts: a grpc-js
// interceptor on every call, so that close() can cancel the calls still in flight). Each run is a fresh
// process with one client, tracked or not (the same etcd3 options otherwise), taking and releasing one
// uncontended lock: 3 s unmeasured, then 3 s measured (sections, and the process's CPU per section).
// Tracked and untracked runs alternate, in pairs whose order alternates too.
// Usage: LOCK_TEST_ETCD=http://127.0.0.1:12379 node -r @swc-node/register bench/probes/etcd-call-tracking.ts [pairs]
// Writes bench/results/etcd-call-tracking.json and .md.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { LockManager, LockService } from '../../libs/distributed-lock/src';
import { EtcdLockStrategy } from '../../libs/distributed-lock/src/strategies/etcd';
import { EtcdCallsInFlight } from '../../libs/distributed-lock/src/strategies/etcd/etcd-calls-in-flight';

const WARM_MS = 3_000;
const MEASURED_MS = 3_000;
type Case = 'tracked' | 'untracked';
interface Run {
  readonly case: Case;
  readonly sections: number;
  readonly cpuUsPerSection: number;
}

const hosts = (): string[] => (process.env.LOCK_TEST_ETCD ?? 'http://127.0.0.1:12379').split(',');

async function child(which: Case): Promise<void> {
  const client = new Etcd3({ hosts: hosts(), ...(which === 'tracked' ? new EtcdCallsInFlight().clientOptions({ hosts: hosts() }) : {}) });
  const manager = new LockManager(new EtcdLockStrategy({ client }));
  const locks = new LockService(manager);
  const section = async (): Promise<void> => void (await (await locks.acquire('etcd-call-tracking')).release());
  for (const warmEnd = Date.now() + WARM_MS; Date.now() < warmEnd; ) await section();
  const cpu = process.cpuUsage();
  let sections = 0;
  for (const end = Date.now() + MEASURED_MS; Date.now() < end; sections += 1) await section();
  const used = process.cpuUsage(cpu);
  await manager.close();
  client.close();
  process.stdout.write(`${JSON.stringify({ case: which, sections, cpuUsPerSection: Math.round((used.user + used.system) / sections) })}\n`);
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return (sorted[Math.floor((sorted.length - 1) / 2)] + sorted[Math.ceil((sorted.length - 1) / 2)]) / 2;
};

function parent(): void {
  const pairs = Number(process.argv[2] ?? 8);
  const runs: Run[] = [];
  const once = (which: Case): Run => JSON.parse(execFileSync(process.execPath, ['-r', '@swc-node/register', __filename], { env: { ...process.env, ETCD_CALL_TRACKING_CASE: which }, encoding: 'utf8' })) as Run;
  for (let pair = 0; pair < pairs; pair += 1) {
    const order: Case[] = pair % 2 === 0 ? ['untracked', 'tracked'] : ['tracked', 'untracked'];
    for (const which of order) runs.push(once(which));
  }
  const of = (which: Case): Run[] => runs.filter((run) => run.case === which);
  const summary = (['untracked', 'tracked'] as const).map((which) => ({
    case: which,
    sections: median(of(which).map((run) => run.sections)),
    cpuUsPerSection: median(of(which).map((run) => run.cpuUsPerSection)),
    range: `${Math.min(...of(which).map((run) => run.sections))}–${Math.max(...of(which).map((run) => run.sections))}`,
  }));
  const [base, tracked] = summary;
  const ratio = (a: number, b: number): string => `${(a / b).toFixed(2)}×`;
  const out = join(__dirname, '..', 'results', 'etcd-call-tracking');
  writeFileSync(`${out}.json`, `${JSON.stringify({ date: new Date().toISOString(), hosts: hosts(), warmMs: WARM_MS, measuredMs: MEASURED_MS, runs, summary }, null, 2)}\n`);
  const table = [
    '| client | sections in 3 s (median) | range | CPU per section (median, µs) |',
    '|---|---|---|---|',
    ...summary.map((row) => `| ${row.case} | ${row.sections} | ${row.range} | ${row.cpuUsPerSection} |`),
    `| tracked vs untracked | ${ratio(tracked.sections, base.sections)} | | ${ratio(tracked.cpuUsPerSection, base.cpuUsPerSection)} |`,
  ];
  writeFileSync(
    `${out}.md`,
    `# The etcd call tracker's cost\n\n- date: ${new Date().toISOString()}\n- one uncontended lock taken and released in a loop by one client, ${pairs} fresh processes per case, alternating; ${WARM_MS / 1000} s unmeasured, then ${MEASURED_MS / 1000} s measured\n- written by \`node -r @swc-node/register bench/probes/etcd-call-tracking.ts ${pairs}\`\n\n${table.join('\n')}\n`,
  );
  console.log(table.join('\n'));
}

if (process.env.ETCD_CALL_TRACKING_CASE) void child(process.env.ETCD_CALL_TRACKING_CASE as Case);
else parent();
