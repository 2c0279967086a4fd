import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import type { Lock } from '../../locking/lock-handle';
import { LockHandle } from '../../locking/lock-handle';
import type { EtcdLeaseGrant } from './etcd-lock.strategy';

/**
 * The comparison that makes an etcd transaction conditional on still holding the lock:
 * `client.if(guard.key, 'Create', '==', guard.createRevision).then(client.put('x').value('y')).commit()`
 * writes only while our contender key exists with our create revision (a fencing check inside etcd).
 */
export function etcdLockGuard(lock: Lock | undefined): { key: string; createRevision: string } {
  const grant = lock instanceof LockHandle ? (lock.grant as Partial<EtcdLeaseGrant>) : undefined;
  if (!grant?.etcdKey || !grant.createRevision) {
    throw new InvalidLockOptionsError('lock', 'etcdLockGuard() needs a lock of the etcd strategy (e.g. currentLock() inside a @Locked method).');
  }
  return { key: grant.etcdKey, createRevision: grant.createRevision };
}
