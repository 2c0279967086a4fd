import { checkLeadership, unexplainedRefusals, type LeaderWriteRecord, type TermRecord } from './check-leadership';

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

  it("explains a new leader's refused write only by a higher term that began elsewhere before the answer", () => {
    const write = (process: string, t: number, accepted: boolean, sent: number, answered: number): LeaderWriteRecord => ({
      election: 'e',
      process,
      term: t,
      accepted,
      sentAt: ms(sent),
      answeredAt: ms(answered),
    });
    // b gained 11428 and was frozen before its write reached the resource; c led meanwhile and wrote 11500.
    const frozenWriter = [term('a', 11400, 0, 1_000), term('b', 11428, 1_000, 7_600), term('c', 11500, 5_000)];
    const late = write('b', 11428, false, 7_500, 7_550);
    expect(unexplainedRefusals(frozenWriter, [late, write('c', 11500, true, 5_001, 5_003)])).toEqual([]);
    // The same term gained twice by one process: its second write is refused, and nothing explains it.
    const twice = [term('a', 11428, 0, 1_000), term('a', 11428, 1_200)];
    const second = write('a', 11428, false, 1_201, 1_203);
    expect(unexplainedRefusals(twice, [write('a', 11428, true, 1, 3), second])).toEqual([second]);
    // A higher term that began only after the answer explains nothing.
    expect(unexplainedRefusals([term('b', 5, 0), term('c', 6, 100)], [write('b', 5, false, 1, 50)])).toHaveLength(1);
  });
});
