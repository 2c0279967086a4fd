import { brokenValue, isBrokenValue, ownerOfValue } from './etcd-contender-value';

describe('etcd contender values', () => {
  it('names the owner whether breakLock marked the value or not, and tells the mark apart', () => {
    const owner = 'web-1:4242:2f1c';
    expect([ownerOfValue(owner), isBrokenValue(owner)]).toEqual([owner, false]);
    expect([ownerOfValue(Buffer.from(brokenValue(owner))), isBrokenValue(Buffer.from(brokenValue(owner)))]).toEqual([owner, true]);
  });
});
