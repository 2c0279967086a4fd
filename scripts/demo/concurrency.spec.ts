import { concurrencySteps, peakConcurrency } from './concurrency';

describe('concurrency of spans', () => {
  it('counts the spans running at once, an end and a start at the same time not overlapping', () => {
    const spans = [
      { startedAt: 0, endedAt: 10 },
      { startedAt: 5, endedAt: 15 },
      { startedAt: 10, endedAt: 20 },
      { startedAt: 12, endedAt: 13 },
    ];
    expect(concurrencySteps(spans)).toEqual([
      { at: 0, inside: 1 },
      { at: 5, inside: 2 },
      { at: 10, inside: 2 },
      { at: 12, inside: 3 },
      { at: 13, inside: 2 },
      { at: 15, inside: 1 },
      { at: 20, inside: 0 },
    ]);
    expect(peakConcurrency(spans)).toBe(3);
  });

  it('is zero without spans', () => {
    expect(concurrencySteps([])).toEqual([]);
    expect(peakConcurrency([])).toBe(0);
  });
});
