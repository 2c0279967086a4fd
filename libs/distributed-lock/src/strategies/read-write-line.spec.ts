import { holdersAhead } from './read-write-line';

describe('holdersAhead', () => {
  it('counts a writer at the head alone, and the readers before the first writer together', () => {
    expect(holdersAhead([])).toBe(0);
    expect(holdersAhead(['exclusive', 'exclusive', 'shared'])).toBe(1);
    expect(holdersAhead(['shared', 'shared', 'exclusive', 'shared'])).toBe(2);
    expect(holdersAhead(['shared', 'shared'])).toBe(2);
  });
});
