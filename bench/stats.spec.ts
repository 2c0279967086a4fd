import { handoffFigures } from './stats';

describe('handoffFigures', () => {
  it('counts no hand-over between two runs of a case (other subjects ran in between)', () => {
    const sections = [
      { worker: 'w0', acquiredAt: 0, releasedAt: 1, run: 0 },
      { worker: 'w1', acquiredAt: 2, releasedAt: 3, run: 0 },
      { worker: 'w1', acquiredAt: 100, releasedAt: 101, run: 1 },
      { worker: 'w1', acquiredAt: 101.5, releasedAt: 102, run: 1 },
    ];
    // Within the runs: gaps 1 and 0.5, one re-acquisition in two hand-overs. Across them (97 ms, w1 → w1)
    // nothing.
    expect(handoffFigures(sections)).toEqual({ handoffP50Ms: 0.5, reacquireShare: 0.5 });
  });

  it('takes every consecutive pair of a single run', () => {
    const sections = [
      { worker: 'w0', acquiredAt: 0, releasedAt: 1 },
      { worker: 'w0', acquiredAt: 1.2, releasedAt: 2 },
      { worker: 'w1', acquiredAt: 2.4, releasedAt: 3 },
    ];
    expect(handoffFigures(sections)).toEqual({ handoffP50Ms: 0.2, reacquireShare: 0.5 });
  });
});
