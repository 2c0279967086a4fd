import { gapSplits, type BenchRow } from './report';

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
