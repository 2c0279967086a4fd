import { bestPeerOf, gapSplits, optionCosts, semaphoreTargetChecks, shapeTargetChecks, targetChecks, type BenchRow } from './report';

const row = (id: string, csPerSec: number, extra: Partial<BenchRow> = {}): BenchRow => ({
  id,
  subject: id,
  ours: false,
  backend: 'redis',
  case: 'uncontended',
  workers: 1,
  processes: 1,
  csPerSec,
  waitP50Ms: 0,
  waitP99Ms: 0,
  worstWorkerWaitP99Ms: 0,
  handoffP50Ms: 0,
  fairness: 1,
  reacquireShare: 0,
  failures: 0,
  violations: 0,
  durationMs: 4_000,
  settings: '',
  ...extra,
});

describe('gapSplits', () => {
  it('splits an uncontended gap into the protocol (own operations raw × floor) and the library (ours × own operations raw)', () => {
    const rows = [
      row('redis', 80, { ours: true, floor: 'floor:a', protocolFloor: 'floor:b' }),
      row('redlock', 90, { ours: true, floor: 'floor:a' }),
      row('floor:a', 100),
      row('floor:b', 85),
    ];
    const splits = gapSplits(rows);
    expect(splits.map((split) => [split.subject, split.protocolVsFloor, split.oursVsProtocol])).toEqual([['redis', 0.85, 0.94]]);
  });
});

describe('shapeTargetChecks', () => {
  it('compares ours with the best peer of the same shape and case only', () => {
    const contended = { case: 'contended' as const, workers: 8, processes: 1 };
    const rows = [
      row('redis', 900, { ...contended, ours: true, shape: 'instances', fairness: 1, worstWorkerWaitP99Ms: 10 }),
      row('peer:a', 1_000, { ...contended, shape: 'instances', fairness: 1.4, worstWorkerWaitP99Ms: 40 }),
      // The same peer much slower where workers share a client: not the comparison for the instances shape.
      row('peer:a', 100, { ...contended, shape: 'shared' }),
      row('redis', 2_000, { ...contended, ours: true }),
    ];
    const checks = shapeTargetChecks(rows);
    expect(checks).toHaveLength(1);
    expect(checks[0].measured).toContain('900 vs peer:a 1000 (0.9×)');
    expect(checks[0].met).toBe(false);
  });
});

describe('semaphoreTargetChecks', () => {
  it('compares a semaphore with the peer semaphore of the same size and case, and never a lock with a semaphore', () => {
    const contended = { case: 'contended' as const, workers: 32, processes: 1 };
    const rows = [
      row('semaphore:redis', 900, { ...contended, ours: true, permits: 4, fairness: 1.1 }),
      row('peer:sem', 1000, { ...contended, permits: 4, fairness: 6 }),
      row('peer:sem-8', 5000, { ...contended, permits: 8, fairness: 1 }),
      row('redis', 500, { ...contended, ours: true }),
      row('peer:mutex', 400, { ...contended }),
    ];
    const checks = semaphoreTargetChecks(rows);
    expect(checks).toHaveLength(1);
    expect(checks[0].measured).toMatch(/^900 vs 1000 \(0\.9×\); fairness 1\.1 vs 6/);
    expect(checks[0].met).toBe(false);
    expect(bestPeerOf(rows, rows[3])?.id).toBe('peer:mutex');
  });
});

describe('optionCosts', () => {
  it('gives a subject with an option as a ratio to its baseline in the same case, and checks the uncontended one against 0.95', () => {
    const contended = { case: 'contended' as const, workers: 8, processes: 1 };
    const rows = [
      row('redis', 1_000, { ours: true }),
      row('redis-telemetry', 960, { ours: true, baseline: 'redis' }),
      row('redis', 500, { ...contended, ours: true }),
      row('redis-telemetry', 450, { ...contended, ours: true, baseline: 'redis' }),
    ];
    expect(optionCosts(rows).map((cost) => [cost.row.case, cost.throughputRatio])).toEqual([
      ['uncontended', 0.96],
      ['contended', 0.9],
    ]);
    const check = targetChecks(rows).find((c) => c.target.startsWith('redis-telemetry'));
    expect(check).toMatchObject({ measured: '960 vs 1000 (0.96×)', met: true });
    rows[1] = row('redis-telemetry', 940, { ours: true, baseline: 'redis' });
    expect(targetChecks(rows).find((c) => c.target.startsWith('redis-telemetry'))?.met).toBe(false);
  });
});
