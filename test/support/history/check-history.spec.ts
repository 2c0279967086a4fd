import { checkHistory } from './check-history';
import type { HistoryRecord, HoldRecord } from './hold-history';

const hold = (over: Partial<HoldRecord> & Pick<HoldRecord, 'owner' | 'from'>): HoldRecord => ({ kind: 'hold', key: 'k', holder: 'p', ...over });

describe('checkHistory', () => {
  it('passes holds one after another with increasing tokens, and writes in token order', () => {
    const history: HistoryRecord[] = [
      hold({ owner: 'a', token: 1, from: '100', until: '200', outcome: 'resolved' }),
      hold({ owner: 'b', token: 2, from: '200', until: '300', outcome: 'resolved' }),
      hold({ owner: 'c', token: 5, from: '310', until: '400', outcome: 'resolved' }),
      { kind: 'write', key: 'k', token: 1, seq: 1 },
      { kind: 'write', key: 'k', token: 5, seq: 2 },
    ];
    expect(checkHistory(history)).toEqual({ holds: 3, writes: 2, keys: 1, anomalies: [] });
  });

  it('finds two holders in at once', () => {
    const result = checkHistory([hold({ owner: 'a', token: 1, from: '100', until: '300' }), hold({ owner: 'b', token: 2, from: '250', until: '400' })]);
    expect(result.anomalies.map((a) => a.rule)).toEqual(['overlap']);
  });

  it('allows an overlap only after the earlier holder was told it lost the lock', () => {
    const toldFirst = checkHistory([hold({ owner: 'a', token: 1, from: '100', until: '300', lostAt: '200', outcome: 'LockLostError' }), hold({ owner: 'b', token: 2, from: '250', until: '400' })]);
    expect(toldFirst.anomalies).toEqual([]);
    const toldLate = checkHistory([hold({ owner: 'a', token: 1, from: '100', until: '300', lostAt: '260', outcome: 'LockLostError' }), hold({ owner: 'b', token: 2, from: '250', until: '400' })]);
    expect(toldLate.anomalies.map((a) => a.rule)).toEqual(['overlap']);
  });

  it('finds a token that does not increase, a stale accepted write, and a loss never told', () => {
    const result = checkHistory([
      hold({ owner: 'a', token: 7, from: '100', until: '200' }),
      hold({ owner: 'b', token: 7, from: '210', until: '300', outcome: 'LockLostError' }),
      { kind: 'write', key: 'k', token: 7, seq: 1 },
      { kind: 'write', key: 'k', token: 6, seq: 2 },
    ]);
    expect(result.anomalies.map((a) => a.rule).sort()).toEqual(['stale-write', 'token-order', 'unreported-loss']);
  });

  it('does not count a holder that died holding the lock as overlapping the one its lease let in', () => {
    const result = checkHistory([hold({ owner: 'a', token: 1, from: '100' }), hold({ owner: 'b', token: 2, from: '5000', until: '6000' })]);
    expect(result.anomalies).toEqual([]);
  });

  it('keeps keys apart', () => {
    const result = checkHistory([hold({ owner: 'a', key: 'x', token: 1, from: '100', until: '300' }), hold({ owner: 'b', key: 'y', token: 1, from: '150', until: '250' })]);
    expect(result).toMatchObject({ keys: 2, anomalies: [] });
  });
});
