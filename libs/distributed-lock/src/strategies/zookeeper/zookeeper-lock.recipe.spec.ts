import { blockerAmong, czxidFromParent } from './zookeeper-lock.recipe';

const LOCK = '/dlock/k';
const writer = (id: string, sequence: number): string => `_c_${id}-write-${String(sequence).padStart(10, '0')}`;
const reader = (id: string, sequence: number): string => `_c_${id}-read-${String(sequence).padStart(10, '0')}`;

describe('ZooKeeper recipe over a listing already made', () => {
  it('gives a writer the node just before it, whatever the listing order, and nothing when it is first', () => {
    const children = [writer('c', 7), writer('a', 3), reader('b', 5)];
    expect(blockerAmong(children, LOCK, writer('c', 7), 'exclusive')).toBe(`${LOCK}/${reader('b', 5)}`);
    expect(blockerAmong(children, LOCK, writer('a', 3), 'exclusive')).toBeUndefined();
  });

  it('gives a reader only the last writer before it', () => {
    const children = [writer('a', 3), reader('b', 5), reader('c', 6)];
    expect(blockerAmong(children, LOCK, reader('c', 6), 'shared')).toBe(`${LOCK}/${writer('a', 3)}`);
    expect(blockerAmong([reader('b', 5), reader('c', 6)], LOCK, reader('c', 6), 'shared')).toBeUndefined();
  });

  it("says 'absent' when our node is not listed", () => {
    expect(blockerAmong([writer('a', 3)], LOCK, writer('z', 9), 'exclusive')).toBe('absent');
  });
});

describe('czxidFromParent', () => {
  it("reads our czxid off the lock node's pzxid only when our create was the last change to its children", () => {
    // Our node got sequence 41 (the lock node's cversion before our create); our create made it 42.
    expect(czxidFromParent({ children: [writer('a', 41)], stat: { cversion: 42, pzxid: 9_001 } }, writer('a', 41))).toBe(9_001);
    // Someone came or went after our create: pzxid is their change, not ours.
    expect(czxidFromParent({ children: [writer('a', 41)], stat: { cversion: 43, pzxid: 9_002 } }, writer('a', 41))).toBeUndefined();
  });
});
