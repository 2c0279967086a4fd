/**
 * The prefix under which the contenders of one lock create their keys. The lock name is URI-encoded, so
 * it holds no "/", and the prefix ends with "/": no lock's prefix can be a prefix of another's ("a/" is
 * not a prefix of "a%2Fb/"), so lock "a" never sees the contenders of lock "a/b".
 *
 * The one name that would be the semaphores' folder, "sem", is written "%73em" ("s" escaped, which
 * encodeURIComponent never does, so no other name gives it): as "sem/" its contenders would see every
 * semaphore's permits as keys ahead of them.
 */
export function etcdLockPrefix(namespace: string, key: string): string {
  const name = encodeURIComponent(key);
  return `${namespace}${name === SEMAPHORES_FOLDER ? '%73em' : name}/`;
}

/** The folder of the semaphores under the namespace (see etcdSemaphorePrefix). */
const SEMAPHORES_FOLDER = 'sem';

/** A contender's own key: its mode (readers and writers of a read-write lock) and its lease, which is unique. */
export function etcdContenderKey(prefix: string, mode: 'exclusive' | 'shared', leaseId: string): string {
  return `${prefix}${mode === 'shared' ? 'r' : 'w'}-${leaseId}`;
}

/** True for a writer's key (a reader waits only for writers ahead of it). */
export function isWriterKey(key: string): boolean {
  return key.slice(key.lastIndexOf('/') + 1).startsWith('w-');
}

/**
 * True when etcd says the lease is gone (expired or revoked). etcd3's `EtcdLeaseInvalidError` leaves
 * `name` as "Error", so the class is recognised by its constructor, or by etcd's own message.
 */
export function isLeaseGoneError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return error.constructor.name === 'EtcdLeaseInvalidError' || error.message.includes('requested lease not found');
}

/**
 * The prefix under which the permits of one semaphore are keys. Apart from every lock's prefix: a lock's
 * name is URI-encoded (it holds no "/"), and the lock named "sem" has a prefix of its own (see
 * etcdLockPrefix), so no lock's prefix starts with "sem/".
 */
export function etcdSemaphorePrefix(namespace: string, key: string): string {
  return `${namespace}${SEMAPHORES_FOLDER}/${encodeURIComponent(key)}/`;
}
