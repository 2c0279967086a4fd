import { permitLineInspection } from './permit-line';

const contender = (owner: string, weight: number, fencingToken: number): { owner: string; weight: number; fencingToken: number } => ({ owner, weight, fencingToken });

describe('permitLineInspection', () => {
  it('names the head of the line whose weights fit as the holders, and everyone from the first that does not fit as waiting', () => {
    const line = [contender('a', 2, 10), contender('b', 1, 11), contender('c', 2, 12), contender('d', 1, 13)];
    expect(permitLineInspection(4, line)).toEqual({
      permits: 4,
      holders: [{ owner: 'a', weight: 2, fencingToken: 10 }, { owner: 'b', weight: 1, fencingToken: 11 }],
      // 'd' would fit in the place left, but no waiter overtakes one ahead of it.
      waiters: [{ owner: 'c', weight: 2 }, { owner: 'd', weight: 1 }],
    });
  });

  it('says nothing of the size of a semaphore nobody is in', () => {
    expect(permitLineInspection(undefined, [])).toEqual({ holders: [], waiters: [] });
    expect(permitLineInspection(3, [])).toEqual({ permits: 3, holders: [], waiters: [] });
  });
});
