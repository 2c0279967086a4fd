// etcd server work per critical section, from etcd's own /metrics (Raft proposals, WAL fsyncs, gRPC calls).
// Usage: node -r @swc-node/register bench/probes/etcd-requests.ts <subject id> <instances> <ms>
// (e.g. `etcd` or `peer:etcd3-lock@etcd`; PROBE_ETCD_METRICS defaults to http://127.0.0.1:12379/metrics).
import { BENCH_SUBJECTS } from '../subjects';
import { contendUntil } from './contend-until';

const [subjectId = 'etcd', instancesArg = '8', windowArg = '4000'] = process.argv.slice(2);
const url = process.env.PROBE_ETCD_METRICS ?? 'http://127.0.0.1:12379/metrics';
const COUNTERS = /^(grpc_server_handled_total\{[^}]*grpc_method="(\w+)"[^}]*\}|etcd_server_proposals_committed_total|etcd_disk_wal_fsync_duration_seconds_count|etcd_mvcc_put_total|etcd_mvcc_delete_total|etcd_mvcc_txn_total) ([\d.e+]+)/;

async function counters(): Promise<Map<string, number>> {
  const text = await (await fetch(url)).text();
  const totals = new Map<string, number>();
  for (const line of text.split('\n')) {
    const match = COUNTERS.exec(line);
    if (!match) continue;
    const name = match[2] ?? match[1];
    totals.set(name, (totals.get(name) ?? 0) + Number(match[3]));
  }
  return totals;
}

async function main(): Promise<void> {
  const subject = BENCH_SUBJECTS.find((s) => s.id === subjectId);
  if (!subject) throw new Error(`unknown subject ${subjectId}`);
  const locks = await Promise.all(Array.from({ length: Number(instancesArg) }, () => subject.create()));
  const key = `probe:${process.pid}:${Date.now()}`;
  const before = await counters();
  const endAt = Date.now() + Number(windowArg);
  const { sections } = await contendUntil(locks, key, endAt);
  const after = await counters();
  console.log(`${subjectId}, ${instancesArg} instances: ${Math.round(sections / (Number(windowArg) / 1000))} sections/s`);
  for (const [name, total] of after) {
    const delta = total - (before.get(name) ?? 0);
    if (delta > 0) console.log(`  ${name.padEnd(45)} ${(delta / sections).toFixed(2)} per section`);
  }
  await Promise.all(locks.map((lock) => lock.close()));
  process.exit(0);
}

void main();
