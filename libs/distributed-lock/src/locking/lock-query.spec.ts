import { lockInfoOf, ownerInfo } from './lock-query';
import { OwnerIds } from './owner-id';

describe('lock query answers', () => {
  it('reads the host and pid from an owner id of this library, and says null for any other form', () => {
    const id = new OwnerIds().next();
    expect(ownerInfo(id)).toEqual({ id, host: expect.any(String), pid: process.pid, instance: null });
    const named = new OwnerIds('shop-7d9f-x2k.eu_1').next();
    expect(ownerInfo(named)).toEqual({ id: named, host: expect.any(String), pid: process.pid, instance: 'shop-7d9f-x2k.eu_1' });
    expect(ownerInfo('someone-else')).toEqual({ id: 'someone-else', host: null, pid: null, instance: null });
    expect(ownerInfo('host:12:not-a-uuid')).toEqual({ id: 'host:12:not-a-uuid', host: null, pid: null, instance: null });
  });

  it('says null for what the backend did not tell, and for a backend without a queue', () => {
    const info = lockInfoOf('k', { holders: [{ owner: 'x', mode: 'exclusive' }] });
    expect(info).toEqual({ key: 'k', held: [{ mode: 'exclusive', owner: { id: 'x', host: null, pid: null, instance: null }, fencingToken: null, grantedAt: null, expiresAt: null }], pending: null });
    expect(lockInfoOf('k', { holders: [], waiters: [] }).pending).toEqual([]);
  });
});
