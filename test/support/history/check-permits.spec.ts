import { checkPermits } from './check-permits';
import type { HistoryRecord, HoldRecord } from './hold-history';

const hold = (over: Partial<HoldRecord> & Pick<HoldRecord, 'owner' | 'from'>): HoldRecord => ({ kind: 'hold', key: 'k', holder: 'p', outcome: 'resolved', ...over });

describe('checkPermits', () => {
  it('passes up to the size at once, a place handed on at the same instant included', () => {
    const result = checkPermits(
      [
        hold({ owner: 'a', from: '100', until: '300' }),
        hold({ owner: 'b', from: '150', until: '250' }),
        hold({ owner: 'c', from: '250', until: '400' }),
      ],
      2,
    );
    expect(result).toMatchObject({ holds: 3, keys: 1, peakInUse: 2, anomalies: [] });
  });

  it('finds more places in use than the size, once per stretch, and counts weights', () => {
    const three = checkPermits([hold({ owner: 'a', from: '100', until: '300' }), hold({ owner: 'b', from: '120', until: '300' }), hold({ owner: 'c', from: '150', until: '200' }), hold({ owner: 'd', from: '160', until: '180' })], 2);
    expect(three.anomalies.map((a) => a.rule)).toEqual(['over-capacity']);
    expect(three.peakInUse).toBe(4);
    const heavy = checkPermits([hold({ owner: 'a', from: '100', until: '300', weight: 2 }), hold({ owner: 'b', from: '200', until: '400' })], 2);
    expect(heavy.anomalies.map((a) => a.rule)).toEqual(['over-capacity']);
  });

  it('counts a hold told of its loss only until then', () => {
    const told = checkPermits([hold({ owner: 'a', from: '100', until: '500', lostAt: '200', outcome: 'LockLostError' }), hold({ owner: 'b', from: '250', until: '400' })], 1);
    expect(told.anomalies).toEqual([]);
  });

  it('excuses a holder frozen inside its section that is told of the loss on waking, not one never told', () => {
    const paused: HistoryRecord = { kind: 'paused', holder: 'frozen', from: '150', until: '1000' };
    const toldOnWaking = checkPermits([paused, hold({ owner: 'a', holder: 'frozen', from: '100', until: '1100', lostAt: '1010', outcome: 'LockLostError' }), hold({ owner: 'b', from: '400', until: '600' })], 1);
    expect(toldOnWaking).toMatchObject({ excused: 1, anomalies: [] });
    const neverTold = checkPermits([paused, hold({ owner: 'a', holder: 'frozen', from: '100', until: '1100' }), hold({ owner: 'b', from: '400', until: '600' })], 1);
    expect(neverTold.anomalies.map((a) => a.rule)).toEqual(['over-capacity']);
  });

  it('does not excuse a hold that began after its process woke on a place the server had given away', () => {
    const result = checkPermits(
      [
        { kind: 'paused', holder: 'frozen', from: '100', until: '1000' },
        // Taken on waking, with lease left by its holder's clock, and told only at its release.
        hold({ owner: 'a', holder: 'frozen', from: '1010', until: '1200', lostAt: '1201', outcome: 'LockLostError', leaseLeftMs: 1_400 }),
        hold({ owner: 'b', from: '900', until: '1500' }),
      ],
      1,
    );
    expect(result.anomalies.map((a) => a.rule)).toEqual(['over-capacity']);
  });

  it('excuses a hold that began on a lease its holder already saw ended, once told; ends a killed holder at its death', () => {
    const stalled = checkPermits([hold({ owner: 'a', from: '100', until: '300', lostAt: '120', outcome: 'LockLostError', leaseLeftMs: -5 }), hold({ owner: 'b', from: '50', until: '400' })], 1);
    expect(stalled.anomalies).toEqual([]);
    const killed = checkPermits([{ kind: 'killed', holder: 'gone', at: '200' }, hold({ owner: 'a', holder: 'gone', from: '100' }), hold({ owner: 'b', from: '150', until: '300' })], 1);
    expect(killed.anomalies.map((a) => a.rule)).toEqual(['over-capacity']);
    const freedAfter = checkPermits([{ kind: 'killed', holder: 'gone', at: '200' }, hold({ owner: 'a', holder: 'gone', from: '100' }), hold({ owner: 'b', from: '2200', until: '2300' })], 1);
    expect(freedAfter.anomalies).toEqual([]);
  });

  it('finds a loss never told', () => {
    expect(checkPermits([hold({ owner: 'a', from: '100', until: '200', outcome: 'LockLostError' })], 1).anomalies.map((a) => a.rule)).toEqual(['unreported-loss']);
  });
});
