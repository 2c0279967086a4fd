import { brokenValue } from './etcd-contender-value';
import { ownKeyEndOf } from './etcd-own-key-end';

describe('ownKeyEndOf', () => {
  const ours = { create_revision: '42', value: Buffer.from('a') };
  const marked = { create_revision: '42', value: Buffer.from(brokenValue('a')) };

  it("keeps the key the holder's through its own moves to another lease", () => {
    expect(ownKeyEndOf('put', ours, undefined, '42')).toBeUndefined();
  });

  it("reports breakLock's mark as broken, on the put or on the delete that follows it", () => {
    expect(ownKeyEndOf('put', marked, ours, '42')).toBe('broken');
    expect(ownKeyEndOf('delete', { create_revision: '0', value: Buffer.alloc(0) }, marked, '42')).toBe('broken');
  });

  it('reports any other delete, and a later key under the same name, as removed', () => {
    expect(ownKeyEndOf('delete', { create_revision: '0', value: Buffer.alloc(0) }, ours, '42')).toBe('removed');
    // A watch without previous values: etcd3 passes null.
    expect(ownKeyEndOf('delete', { create_revision: '0', value: Buffer.alloc(0) }, null, '42')).toBe('removed');
    expect(ownKeyEndOf('put', { ...marked, create_revision: '57' }, undefined, '42')).toBe('removed');
    // The mark of an earlier key under the same name is not this holder's.
    expect(ownKeyEndOf('delete', { create_revision: '0', value: Buffer.alloc(0) }, { ...marked, create_revision: '7' }, '42')).toBe('removed');
  });
});
