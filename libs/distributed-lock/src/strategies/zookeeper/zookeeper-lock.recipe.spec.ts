import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import type { ZooKeeperLockClient } from './zookeeper-client.type';
import { blockerAmong, blockerOf, tokenFromFirstLook } from './zookeeper-lock.recipe';

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

  it('rejects with LockBackendUnavailableError when a fresh listing no longer has our node (its session expired)', async () => {
    const client = { sync: async () => undefined, get_children: async () => [writer('a', 3)] } as unknown as ZooKeeperLockClient;
    const error = await blockerOf(client, LOCK, writer('z', 9), 'exclusive', 'orders-zk').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockBackendUnavailableError);
    expect(error).toMatchObject({ strategy: 'orders-zk', message: expect.stringContaining('is gone') });
  });
});

describe('tokenFromFirstLook', () => {
  // The look before our create, and the one behind it: cversion counts creates and deletes of children.
  const before = (cversion: number | string, children: string[] = []) => ({ children, stat: { pzxid: 1, cversion } });

  it("takes the lock node's pzxid when the first look lists our node alone and our create was the one change since the look before, whatever its sequence", () => {
    // Sequence numbers count creates only: after many create/delete pairs ours is far below the cversion.
    expect(tokenFromFirstLook({ children: [writer('a', 41)], stat: { pzxid: 9_001, cversion: 83 } }, writer('a', 41), before(82))).toBe(9_001);
    expect(tokenFromFirstLook({ children: [reader('a', 7)], stat: { pzxid: '9002', cversion: '15' } }, reader('a', 7), before('14'))).toBe(9_002);
  });

  it('tells nothing when another node came or went between the two looks: pzxid is then that change, not our create', () => {
    // The last holder's release between our create and the look behind it (seen in CI: the query named our
    // czxid, 116, and our token was that delete's zxid, 117).
    expect(tokenFromFirstLook({ children: [writer('a', 41)], stat: { pzxid: 117, cversion: 84 } }, writer('a', 41), before(82, [writer('b', 40)]))).toBeUndefined();
    // No look before (the lock node did not exist yet, or the look failed).
    expect(tokenFromFirstLook({ children: [writer('a', 0)], stat: { pzxid: 9_001, cversion: 1 } }, writer('a', 0), undefined)).toBeUndefined();
  });

  it('tells nothing when anyone else is listed, ahead or behind, or when our node is missing', () => {
    expect(tokenFromFirstLook({ children: [writer('a', 41), writer('b', 42)], stat: { pzxid: 9_003, cversion: 83 } }, writer('a', 41), before(82))).toBeUndefined();
    expect(tokenFromFirstLook({ children: [reader('b', 40), reader('a', 41)], stat: { pzxid: 9_003, cversion: 83 } }, reader('a', 41), before(82))).toBeUndefined();
    expect(tokenFromFirstLook({ children: [writer('b', 40)], stat: { pzxid: 9_003, cversion: 83 } }, writer('a', 41), before(82))).toBeUndefined();
  });
});
