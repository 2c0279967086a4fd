import { inspectionOf } from './redis-lock-inspection';

describe('Redis lock inspection', () => {
  it('moves the server times onto this process clock by the server now in the reply', () => {
    const inspection = inspectionOf([10_000, 'w', '77', '9000', 4_000, [], ['a', 'x', 'b', 's']], 50_000);
    expect(inspection.holders).toEqual([{ owner: 'w', mode: 'exclusive', fencingToken: 77, grantedAt: 49_000, expiresAt: 54_000 }]);
    expect(inspection.waiters).toEqual([{ owner: 'a', mode: 'exclusive' }, { owner: 'b', mode: 'shared' }]);
  });

  it('lists readers with their own lease end and token, and no token where there is no fencing', () => {
    const inspection = inspectionOf([10_000, '', '', '', -2, ['r1', '12000', '5', 'r2', '11000', '0'], []], 50_000);
    expect(inspection.holders).toEqual([
      { owner: 'r1', mode: 'shared', expiresAt: 52_000, fencingToken: 5 },
      { owner: 'r2', mode: 'shared', expiresAt: 51_000 },
    ]);
  });

  it('leaves out the lease end of a writer whose key has no expiry, and the grant time an older writer never stored', () => {
    const inspection = inspectionOf([10_000, 'w', '3', '', -1, [], []], 50_000);
    expect(inspection.holders).toEqual([{ owner: 'w', mode: 'exclusive', fencingToken: 3 }]);
  });
});
