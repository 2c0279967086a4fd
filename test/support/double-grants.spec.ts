import { doubleGrants } from './double-grants';

describe('doubleGrants', () => {
  it('finds nothing in holds one after another, also when one ends as the next starts', () => {
    expect(doubleGrants([{ startedAt: 0, endedAt: 10 }, { startedAt: 10, endedAt: 20 }, { startedAt: 25, endedAt: 30 }])).toEqual({ count: 0, windowsMs: [] });
  });

  it('measures each overlapping pair from the later start to the first end, whatever the order given', () => {
    const holds = [
      { startedAt: 50, endedAt: 60 },
      { startedAt: 0, endedAt: 100 },
      { startedAt: 90, endedAt: 120 },
    ];
    // [0,100] overlaps [50,60] for 10 ms and [90,120] for 10 ms; [50,60] and [90,120] do not meet.
    expect(doubleGrants(holds)).toEqual({ count: 2, windowsMs: [10, 10] });
  });
});
