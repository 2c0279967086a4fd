import { distanceChart, slopeOf, type DistanceRow } from './distance-report';

describe('distance report', () => {
  it('reads round trips as the least-squares slope of latency against RTT', () => {
    // 3 round trips plus 0.4 ms of work at every distance.
    expect(slopeOf([0, 1, 5, 20].map((rtt) => [rtt, 0.4 + 3 * rtt]))).toBeCloseTo(3, 10);
    expect(slopeOf([[0, 1], [0, 2]])).toBeNaN();
  });

  it('draws one line per strategy in each panel', () => {
    const rows: DistanceRow[] = ['redis', 'etcd'].flatMap((id) =>
      [0, 5].map((rttMs) => ({ id, backend: id === 'redis' ? 'redis' : 'etcd', rttMs, acquireMs: rttMs + 1, cycleMs: 2 * rttMs + 1, samples: 10, handoverMs: rttMs, sections: 10, failures: 0 }) as const),
    );
    const svg = distanceChart(rows);
    expect(svg.match(/<polyline/g)).toHaveLength(4);
    expect(svg).toContain('>redis</text>');
    // A strategy with an unmeasured case (NaN) is left out rather than break the scale.
    const withGap = distanceChart([...rows, { ...rows[0], id: 'gap', acquireMs: Number.NaN }]);
    expect(withGap).not.toContain('NaN');
    expect(withGap).not.toContain('>gap</text>');
  });
});
