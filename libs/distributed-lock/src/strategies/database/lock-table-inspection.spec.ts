import { lockTableInspection } from './lock-table-inspection';

describe('lockTableInspection', () => {
  it("moves the server's times onto this clock by the server's now in the same rows, and lists places in ticket order", () => {
    const inspection = lockTableInspection(
      [
        { kind: 1, owner: 'late', token: '12', expires_at: 10_500, granted_at: 9_900, now_ms: 10_000 },
        { kind: '0', owner: 'holder', token: '1795984616370001', expires_at: '14000', granted_at: '9000', now_ms: '10000' },
        { kind: 1, owner: 'early', token: 7, expires_at: 10_500, granted_at: 9_800, now_ms: 10_000 },
      ],
      50_000,
    );
    expect(inspection).toEqual({
      holders: [{ owner: 'holder', mode: 'exclusive', fencingToken: 1795984616370001, grantedAt: 49_000, expiresAt: 54_000 }],
      waiters: [
        { owner: 'early', mode: 'exclusive' },
        { owner: 'late', mode: 'exclusive' },
      ],
    });
  });

  it('leaves out the grant time a row does not have, and the place of a contender already granted', () => {
    const inspection = lockTableInspection(
      [
        { kind: 0, owner: 'holder', token: 3, expires_at: 11_000, granted_at: null, now_ms: 10_000 },
        { kind: 1, owner: 'holder', token: 4, expires_at: 10_500, granted_at: 9_900, now_ms: 10_000 },
      ],
      10_000,
    );
    expect(inspection).toEqual({ holders: [{ owner: 'holder', mode: 'exclusive', fencingToken: 3, expiresAt: 11_000 }], waiters: [] });
  });

  it('says nobody holds or waits for a key without rows', () => {
    expect(lockTableInspection([], 1)).toEqual({ holders: [], waiters: [] });
  });
});
