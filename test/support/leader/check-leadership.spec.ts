import { checkLeadership, type TermRecord } from './check-leadership';

const ms = (value: number): string => String(BigInt(value) * 1_000_000n);
const term = (process: string, t: number, from: number, until?: number): TermRecord => ({
  election: 'e',
  process,
  term: t,
  from: ms(from),
  ...(until === undefined ? {} : { until: ms(until) }),
});

describe('checkLeadership', () => {
  it('accepts leaders one after the other, and a leader that died before the next began', () => {
    const terms = [term('a', 1, 0, 100), term('b', 2, 100, 300), term('c', 3, 400)];
    expect(checkLeadership(terms, { freezes: [], deaths: [] }, 1_000)).toEqual([]);
    const died = [term('a', 1, 0), term('b', 2, 3_000)];
    expect(checkLeadership(died, { freezes: [], deaths: [{ process: 'a', at: ms(10) }] }, 1_000)).toEqual([]);
  });

  it('flags two leaders at once, and terms that do not increase', () => {
    expect(checkLeadership([term('a', 1, 0, 500), term('b', 2, 400, 900)], { freezes: [], deaths: [] }, 1_000).map((a) => a.rule)).toEqual(['two-leaders']);
    expect(checkLeadership([term('a', 5, 0, 100), term('b', 4, 200)], { freezes: [], deaths: [] }, 1_000).map((a) => a.rule)).toEqual(['term-order']);
  });

  it('allows a frozen leader to overlap its successor only if told within the bound after waking', () => {
    const freezes = [{ process: 'a', stoppedAt: ms(100), resumedAt: ms(6_000) }];
    expect(checkLeadership([term('a', 1, 0, 6_200), term('b', 2, 4_000)], { freezes, deaths: [] }, 1_000)).toEqual([]);
    expect(checkLeadership([term('a', 1, 0, 7_500), term('b', 2, 4_000)], { freezes, deaths: [] }, 1_000).map((a) => a.rule)).toEqual(['two-leaders']);
  });
});
