import type { EntityManager } from 'typeorm';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import type { Lock } from '../../locking/lock-handle';
import { LockHandle } from '../../locking/lock-handle';
import type { PessimisticLeaseGrant } from './pessimistic-lock.strategy';

/**
 * The EntityManager of a lock's transaction (`PessimisticLockStrategy`, or `AdvisoryLockStrategy` with
 * `scope: 'transaction'`): writes through it commit together with the release (or roll back with a failed
 * section). Throws when the lock has no transaction.
 */
export function lockTransaction(lock: Lock | undefined): EntityManager {
  const grant = lock instanceof LockHandle ? (lock.grant as Partial<PessimisticLeaseGrant>) : undefined;
  if (!grant?.manager) {
    throw new InvalidLockOptionsError('lock', 'lockTransaction() needs a lock of the pessimistic strategy or of the advisory strategy with scope "transaction" (held in this call chain, e.g. currentLock()).');
  }
  return grant.manager;
}
