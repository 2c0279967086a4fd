import type { Backend, BenchShape } from './bench-subject';
import { round } from './stats';

export interface BenchRow {
  /** Unique per subject (a peer package runs on several backends). */
  id: string;
  /** Ours: the strategy name; a peer: its package name; a floor: `floor:<what>`. */
  subject: string;
  /** The floor this row is compared with (ours only). */
  floor?: string;
  /** The floor of the strategy's own server operations, when `floor` does less (see BenchSubject.protocolFloor). */
  protocolFloor?: string;
  /** The subject this one is plus an option (see BenchSubject.baseline). */
  baseline?: string;
  ours: boolean;
  backend: Backend;
  case: 'uncontended' | 'contended';
  /** How the contenders were deployed (see BenchShape); rows of earlier runs without it are `shared`. */
  shape?: BenchShape;
  workers: number;
  processes: number;
  csPerSec: number;
  waitP50Ms: number;
  waitP99Ms: number;
  /** The p99 wait of the worst-served worker (see ContendResult.workerWaitP99). */
  worstWorkerWaitP99Ms: number;
  handoffP50Ms: number;
  fairness: number;
  reacquireShare: number;
  failures: number;
  violations: number;
  durationMs: number;
  settings: string;
  /** Work inside each section, in ms, where the case has some. */
  holdMs?: number;
  /** Share of the window during which the lock was held (cases with work inside the section). */
  utilization?: number;
  /** A counting semaphore's size (see BenchSubject.permits); absent for a lock. */
  permits?: number;
}

/** The shape of a row; runs before shapes existed measured `shared` only. */
export const shapeOf = (row: BenchRow): BenchShape => row.shape ?? 'shared';

const sameCase = (a: BenchRow, b: BenchRow): boolean =>
  a.backend === b.backend && a.case === b.case && a.workers === b.workers && a.processes === b.processes && shapeOf(a) === shapeOf(b) && (a.permits ?? 1) === (b.permits ?? 1);
const isPeer = (row: BenchRow): boolean => !row.ours && !row.subject.startsWith('floor:');

export function floorOf(rows: readonly BenchRow[], row: BenchRow, which: 'floor' | 'protocolFloor' = 'floor'): BenchRow | undefined {
  const id = row[which];
  return id === undefined ? undefined : rows.find((r) => r.id === id && r.case === row.case && r.workers === row.workers && r.processes === row.processes && shapeOf(r) === shapeOf(row));
}

/** The peer with the most critical sections per second in the same case, if any ran. */
export function bestPeerOf(rows: readonly BenchRow[], row: BenchRow): BenchRow | undefined {
  return rows.filter((r) => isPeer(r) && sameCase(r, row)).sort((a, b) => b.csPerSec - a.csPerSec)[0];
}

const ratio = (ours: number, other: number | undefined): string => (other && other > 0 ? `${round(ours / other, 2)}` : '');

interface TargetCheck {
  readonly target: string;
  readonly measured: string;
  readonly met: boolean;
}

function find(rows: readonly BenchRow[], id: string, workers: number, processes = 1): BenchRow | undefined {
  return rows.find(
    (r) => r.id === id && r.workers === workers && r.processes === processes && shapeOf(r) === 'shared' && (workers === 1 ? r.case === 'uncontended' : r.case === 'contended'),
  );
}

/** The benchmark's targets against the floors and the peers, checked against this run's rows (only those whose rows ran). */
export function targetChecks(rows: readonly BenchRow[]): TargetCheck[] {
  const checks: TargetCheck[] = [];
  for (const workers of [8, 32]) {
    const ours = find(rows, 'redis', workers);
    const peer = ours && bestPeerOf(rows, ours);
    if (!ours || !peer) continue;
    // Waits compared worker by worker: a barging peer's pooled p99 is made of its re-acquiring worker's
    // instant waits and hides the workers it keeps waiting.
    const met = ours.csPerSec >= peer.csPerSec && ours.worstWorkerWaitP99Ms <= peer.worstWorkerWaitP99Ms / 10 && ours.fairness <= 1.5;
    checks.push({
      target: `Redis FIFO, C=${workers}: cs/s ≥ best peer, wait p99 (worst worker) ≤ 1/10 of its, fairness ≤ 1.5`,
      measured: `${ours.csPerSec} vs ${peer.subject} ${peer.csPerSec} (${ratio(ours.csPerSec, peer.csPerSec)}×); worst-worker p99 ${ours.worstWorkerWaitP99Ms} vs ${peer.worstWorkerWaitP99Ms} ms (pooled ${ours.waitP99Ms} vs ${peer.waitP99Ms}); fairness ${ours.fairness} vs ${peer.fairness}`,
      met,
    });
  }
  const redlock = find(rows, 'redlock', 32);
  const redlockPeer = redlock && bestPeerOf(rows, redlock);
  if (redlock && redlockPeer) {
    checks.push({
      target: 'Redlock on 5 masters, C=32: ≥ 5× the best peer, nobody starves',
      measured: `${redlock.csPerSec} vs ${redlockPeer.subject} ${redlockPeer.csPerSec} (${ratio(redlock.csPerSec, redlockPeer.csPerSec)}×); fairness ${redlock.fairness}`,
      met: redlock.csPerSec >= 5 * redlockPeer.csPerSec && Number.isFinite(redlock.fairness),
    });
  }
  const etcd = find(rows, 'etcd', 8);
  const etcdPeer = find(rows, 'peer:etcd3-lock@etcd', 8);
  if (etcd && etcdPeer) {
    checks.push({
      target: 'etcd, C=8: ≥ 3× etcd3 lock() + retry, FIFO',
      measured: `${etcd.csPerSec} vs ${etcdPeer.csPerSec} (${ratio(etcd.csPerSec, etcdPeer.csPerSec)}×); fairness ${etcd.fairness}`,
      met: etcd.csPerSec >= 3 * etcdPeer.csPerSec,
    });
  }
  const zk = find(rows, 'zookeeper', 8);
  const zkPeer = find(rows, 'peer:textbook@zookeeper', 8);
  if (zk && zkPeer) {
    checks.push({
      target: 'ZooKeeper, C=8: ≥ the textbook recipe',
      measured: `${zk.csPerSec} vs ${zkPeer.csPerSec} (${ratio(zk.csPerSec, zkPeer.csPerSec)}×)`,
      met: zk.csPerSec >= zkPeer.csPerSec,
    });
  }
  for (const cost of optionCosts(rows).filter((c) => c.row.case === 'uncontended' && shapeOf(c.row) === 'shared')) {
    checks.push({
      target: `${cost.row.subject} uncontended: ≥ ${OPTION_COST_TARGET}× ${cost.baseline.subject} (in the same turns)`,
      measured: `${cost.row.csPerSec} vs ${cost.baseline.csPerSec} (${cost.throughputRatio}×)`,
      met: cost.throughputRatio >= OPTION_COST_TARGET,
    });
  }
  // The databases' own lock queues (the advisory strategies) against the raw pg_advisory_lock / GET_LOCK,
  // and the lock table and FOR UPDATE on PostgreSQL against their own SQL sent raw.
  const againstRaw: ReadonlyArray<readonly [string, number, boolean]> = [
    ['advisory-postgres', 0.9, true],
    ['advisory-mysql', 0.9, true],
    ['row-postgres', 0.8, false],
    ['pessimistic-postgres', 0.8, false],
  ];
  for (const [id, share, fair] of againstRaw) {
    for (const processes of [1, 4]) {
      const ours = find(rows, id, 8, processes);
      const raw = ours && floorOf(rows, ours);
      if (!ours || !raw) continue;
      checks.push({
        target: `${id}, C=8 × ${processes}p: ≥ ${share}× ${raw.subject}${fair ? ', fairness ≤ 1.2' : ''}`,
        measured: `${ours.csPerSec} vs ${raw.csPerSec} (${ratio(ours.csPerSec, raw.csPerSec)}×); fairness ${ours.fairness} vs ${raw.fairness}`,
        met: ours.csPerSec >= share * raw.csPerSec && (!fair || ours.fairness <= 1.2),
      });
    }
  }
  for (const row of rows.filter((r) => r.ours && r.case === 'uncontended')) {
    const floor = floorOf(rows, row);
    if (!floor) continue;
    checks.push({
      target: `${row.subject} uncontended: ≥ 0.9× ${floor.subject}`,
      measured: `${row.csPerSec} vs ${floor.csPerSec} (${ratio(row.csPerSec, floor.csPerSec)}×)`,
      met: row.csPerSec >= 0.9 * floor.csPerSec,
    });
  }
  return checks;
}

const DEPLOYMENT_SHAPES: readonly BenchShape[] = ['instances', 'flash-sale'];
const caseLabel = (row: BenchRow): string => `${shapeOf(row)} ${row.workers}×${row.processes}p`;

/**
 * The targets in the shapes users deploy (separate instances, the flash sale): against the
 * best peer in the same shape and run, or against the recipe a user would otherwise write.
 */
/**
 * Issue 27: our Redis semaphore against redis-semaphore's `Semaphore` of the same size in the same case:
 * at least its throughput, at equal or better fairness.
 */
export function semaphoreTargetChecks(rows: readonly BenchRow[]): TargetCheck[] {
  const checks: TargetCheck[] = [];
  for (const ours of rows.filter((r) => r.ours && r.permits !== undefined && r.case === 'contended')) {
    const peer = bestPeerOf(rows, ours);
    if (!peer) continue;
    checks.push({
      target: `${ours.subject}, ${caseLabel(ours)}: cs/s ≥ ${peer.subject}, fairness ≤ its`,
      measured: `${ours.csPerSec} vs ${peer.csPerSec} (${ratio(ours.csPerSec, peer.csPerSec)}×); fairness ${ours.fairness} vs ${peer.fairness}; worst-worker p99 ${ours.worstWorkerWaitP99Ms} vs ${peer.worstWorkerWaitP99Ms} ms`,
      met: ours.csPerSec >= peer.csPerSec && ours.fairness <= peer.fairness,
    });
  }
  return checks;
}

export function shapeTargetChecks(rows: readonly BenchRow[]): TargetCheck[] {
  const checks: TargetCheck[] = [];
  const inShapes = rows.filter((r) => r.ours && DEPLOYMENT_SHAPES.includes(shapeOf(r)));
  for (const ours of inShapes.filter((r) => r.id === 'redis' || r.id === 'redlock')) {
    const peer = bestPeerOf(rows, ours);
    if (!peer) continue;
    checks.push({
      target: `${ours.subject}, ${caseLabel(ours)}: cs/s ≥ best peer, fairness ≤ 1.5, worst-worker p99 ≤ 0.5× the peer's`,
      measured: `${ours.csPerSec} vs ${peer.subject} ${peer.csPerSec} (${ratio(ours.csPerSec, peer.csPerSec)}×); fairness ${ours.fairness} vs ${peer.fairness}; worst-worker p99 ${ours.worstWorkerWaitP99Ms} vs ${peer.worstWorkerWaitP99Ms} ms`,
      met: ours.csPerSec >= peer.csPerSec && ours.fairness <= 1.5 && ours.worstWorkerWaitP99Ms <= 0.5 * peer.worstWorkerWaitP99Ms,
    });
  }
  const recipes: Record<string, string> = { zookeeper: 'peer:textbook@zookeeper', etcd: 'peer:etcd3-lock@etcd' };
  for (const ours of inShapes.filter((r) => recipes[r.id] !== undefined)) {
    const recipe = rows.find((r) => r.id === recipes[ours.id] && sameCase(r, ours));
    if (!recipe) continue;
    checks.push({
      target: `${ours.subject}, ${caseLabel(ours)}: ≥ ${recipe.subject}`,
      measured: `${ours.csPerSec} vs ${recipe.csPerSec} (${ratio(ours.csPerSec, recipe.csPerSec)}×); fairness ${ours.fairness} vs ${recipe.fairness}`,
      met: ours.csPerSec >= recipe.csPerSec,
    });
  }
  for (const ours of inShapes.filter((r) => (r.id === 'row-mysql' || r.id === 'pessimistic') && r.workers === 32)) {
    checks.push({
      target: `${ours.id}, ${caseLabel(ours)}: fairness ≤ 2, nobody starved`,
      measured: `fairness ${ours.fairness}; worst-worker p99 ${ours.worstWorkerWaitP99Ms} ms`,
      met: ours.fairness <= 2,
    });
  }
  return checks;
}

/** What an option costs: a subject against its baseline (the same subject without it), in one case. */
export interface OptionCost {
  readonly row: BenchRow;
  readonly baseline: BenchRow;
  /** Sections per second with the option over those without it. */
  readonly throughputRatio: number;
}

/** The largest cost the telemetry may have in the uncontended case: 5 % of the throughput. */
export const OPTION_COST_TARGET = 0.95;

export function optionCosts(rows: readonly BenchRow[]): OptionCost[] {
  const costs: OptionCost[] = [];
  for (const row of rows) {
    const baseline = row.baseline === undefined ? undefined : rows.find((r) => r.id === row.baseline && sameCase(r, row));
    if (!baseline || baseline.csPerSec <= 0) continue;
    costs.push({ row, baseline, throughputRatio: round(row.csPerSec / baseline.csPerSec, 3) });
  }
  return costs;
}

/** An uncontended gap to the floor split in two: the strategy's server operations, and the library's code around them. */
export interface GapSplit {
  readonly subject: string;
  readonly floor: BenchRow;
  readonly protocolFloor: BenchRow;
  /** The strategy's own operations sent raw, against the floor: what the protocol costs on the server. */
  readonly protocolVsFloor: number;
  /** Ours against its own operations sent raw: what the library's code adds. */
  readonly oursVsProtocol: number;
}

export function gapSplits(rows: readonly BenchRow[]): GapSplit[] {
  const splits: GapSplit[] = [];
  for (const row of rows.filter((r) => r.ours && r.case === 'uncontended')) {
    const floor = floorOf(rows, row);
    const protocolFloor = floorOf(rows, row, 'protocolFloor');
    if (!floor || !protocolFloor || floor.csPerSec <= 0 || protocolFloor.csPerSec <= 0) continue;
    splits.push({
      subject: row.subject,
      floor,
      protocolFloor,
      protocolVsFloor: round(protocolFloor.csPerSec / floor.csPerSec, 2),
      oursVsProtocol: round(row.csPerSec / protocolFloor.csPerSec, 2),
    });
  }
  return splits;
}

/** A titled markdown table with its introduction; nothing when it has no rows. */
function pushTable(lines: string[], title: string, intro: string, columns: readonly string[], cells: ReadonlyArray<ReadonlyArray<string | number | undefined>>): void {
  if (cells.length === 0) return;
  lines.push(title, '', intro, '', `| ${columns.join(' | ')} |`, `|${columns.map(() => '---|').join('')}`);
  for (const row of cells) lines.push(`| ${row.map((cell) => cell ?? '').join(' | ')} |`);
  lines.push('');
}

export function markdown(rows: readonly BenchRow[], meta: Record<string, string>): string {
  const lines = ['# Benchmark results', '', ...Object.entries(meta).map(([k, v]) => `- ${k}: ${v}`), ''];
  const checks = targetChecks(rows);
  if (checks.length > 0) {
    lines.push('## Targets', '', '| target | measured | met |', '|---|---|---|');
    for (const check of checks) lines.push(`| ${check.target} | ${check.measured} | ${check.met ? 'yes' : '**no**'} |`);
    lines.push('');
  }
  const semaphoreChecks = semaphoreTargetChecks(rows);
  if (semaphoreChecks.length > 0) {
    lines.push('## Targets of the semaphore', '', '| target | measured | met |', '|---|---|---|');
    for (const check of semaphoreChecks) lines.push(`| ${check.target} | ${check.measured} | ${check.met ? 'yes' : '**no**'} |`);
    lines.push('');
  }
  const shapeChecks = shapeTargetChecks(rows);
  if (shapeChecks.length > 0) {
    lines.push('## Targets in the deployment shapes', '', '| target | measured | met |', '|---|---|---|');
    for (const check of shapeChecks) lines.push(`| ${check.target} | ${check.measured} | ${check.met ? 'yes' : '**no**'} |`);
    lines.push('');
  }
  const busy = rows.filter((r) => r.utilization !== undefined);
  if (busy.length > 0) {
    lines.push(
      '## Lock utilization',
      '',
      'The share of the window during which someone held the lock (sum of hold times over wall time), in the cases with work inside the section: 100 % would mean hand-overs cost nothing.',
      '',
      '| subject | backend | case | work in the lock | cs/s | utilization | hand-over p50 ms | fairness |',
      '|---|---|---|---|---|---|---|---|',
    );
    for (const row of busy) {
      lines.push(`| ${row.ours ? `**${row.subject}**` : row.subject} | ${row.backend} | ${caseLabel(row)} | ${row.holdMs} ms | ${row.csPerSec} | ${Math.round((row.utilization ?? 0) * 100)} % | ${row.handoffP50Ms} | ${row.fairness} |`);
    }
    lines.push('');
  }
  pushTable(
    lines,
    '## What an option costs',
    'A subject against the same subject without the option, measured in the same turns (`redis-telemetry` is `redis` with the OpenTelemetry observer and a real SDK).',
    ['subject', 'without it', 'case', 'cs/s', 'cs/s without', 'ratio', 'wait p50 ms', 'without', 'wait p99 ms', 'without'],
    optionCosts(rows).map(({ row, baseline, throughputRatio }) => [
      row.subject, baseline.subject, caseLabel(row), row.csPerSec, baseline.csPerSec, throughputRatio, row.waitP50Ms, baseline.waitP50Ms, row.waitP99Ms, baseline.waitP99Ms,
    ]),
  );
  pushTable(
    lines,
    '## Where an uncontended gap to the floor lies',
    'The strategy\'s own server operations, sent raw in the same turns: against the floor, what its protocol costs on the server; ours against them, what the library\'s code adds.',
    ['subject', 'own operations raw', '× floor', 'ours × own operations raw'],
    gapSplits(rows).map((split) => [split.subject, split.protocolFloor.subject, split.protocolVsFloor, split.oursVsProtocol]),
  );
  lines.push(
    '## All rows',
    '',
    'Bold rows are this library; `× floor` and `× best peer` compare critical sections per second with the floor of the same server operations and with the fastest peer in the same case of the same run. Waits include failed acquisitions (time until the give-up); `worst worker p99` is the p99 of the worker that waited most.',
    '',
    '| subject | backend | case | shape | workers | procs | cs/s | × floor | × best peer | wait p50 ms | wait p99 ms | worst worker p99 ms | hand-over p50 ms | fairness max/min | re-acquire share | utilization | failures | violations |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const row of rows) {
    const vsFloor = ratio(row.csPerSec, floorOf(rows, row)?.csPerSec);
    const vsPeer = row.ours ? ratio(row.csPerSec, bestPeerOf(rows, row)?.csPerSec) : '';
    lines.push(
      `| ${row.ours ? `**${row.subject}**` : row.subject} | ${row.backend} | ${row.case} | ${shapeOf(row)} | ${row.workers} | ${row.processes} | ${row.csPerSec} | ${vsFloor} | ${vsPeer} | ${row.waitP50Ms} | ${row.waitP99Ms} | ${row.worstWorkerWaitP99Ms} | ${row.handoffP50Ms} | ${row.fairness} | ${row.reacquireShare} | ${row.utilization ?? ''} | ${row.failures} | ${row.violations} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}
