// Usage: tsx bench/failover-report.ts <failover.jsonl> [out-dir]
// Summarises the failover times that `test/faults/leader-election.fault.spec.ts` appends to
// LOCK_FAILOVER_REPORT (one line per run: { ttlMs, zookeeperSessionMs, failoverMs: { backend: ms } })
// into <out-dir>/failover.json (every run, and min/median/max per backend) and failover.md (the table).
import { cpus } from 'node:os';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

interface Run {
  readonly ttlMs: number;
  readonly zookeeperSessionMs: number;
  readonly failoverMs: Record<string, number>;
}

const [input, outDir = 'bench/results'] = process.argv.slice(2);
if (!input) throw new Error('usage: tsx bench/failover-report.ts <failover.jsonl> [out-dir]');
const runs = readFileSync(input, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((line) => JSON.parse(line) as Run);
const backends = [...new Set(runs.flatMap((run) => Object.keys(run.failoverMs)))];
const summary = Object.fromEntries(
  backends.map((backend) => {
    const values = runs.map((run) => run.failoverMs[backend]).filter((v): v is number => typeof v === 'number').sort((a, b) => a - b);
    return [backend, { runs: values.length, minMs: values[0], medianMs: values[Math.floor((values.length - 1) / 2)], maxMs: values[values.length - 1] }];
  }),
);
const settings = { ttlMs: runs[0]?.ttlMs, zookeeperSessionMs: runs[0]?.zookeeperSessionMs, machine: `${cpus().length} cores, Node ${process.version}`, date: new Date().toISOString() };
writeFileSync(join(outDir, 'failover.json'), `${JSON.stringify({ settings, summary, runs }, null, 2)}\n`);
const rows = backends.map((b) => `| ${b} | ${summary[b].runs} | ${summary[b].minMs} | ${summary[b].medianMs} | ${summary[b].maxMs} |`);
writeFileSync(
  join(outDir, 'failover.md'),
  [
    '# Leader failover: SIGKILL of the leader → a new leader',
    '',
    `Election lease ${settings.ttlMs} ms, ZooKeeper session timeout ${settings.zookeeperSessionMs} ms; ${settings.machine}; ${settings.date}.`,
    'From `test/faults/leader-election.fault.spec.ts` (three app processes, one election per backend), `LOCK_FAILOVER_REPORT` set.',
    '',
    '| backend | runs | min ms | median ms | max ms |',
    '|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n'),
);
process.stdout.write(`${rows.join('\n')}\n`);
