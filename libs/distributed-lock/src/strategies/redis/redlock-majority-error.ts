import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import { LockPermissionDeniedError } from '../../errors/lock-permission-denied.error';
import { redisCallError } from './redis-acl';
import type { NodeOutcome } from './redlock-round';

/** Where a Redlock round was made: for the error's message and the ACL rules it names. */
export interface RedlockCallSite {
  readonly strategy: string;
  readonly namespace: string;
  readonly operation: string;
  readonly key: string;
}

/**
 * The error of a round that too few masters answered to decide anything: `LockPermissionDeniedError` when a
 * master refused the call by its ACL (or a wrong password) rather than being down, since no wait fixes that
 * and the error says what to grant; else `LockBackendUnavailableError`, with the first error as its cause.
 */
export function majorityError(site: RedlockCallSite, outcomes: readonly NodeOutcome[], quorum: number, elapsedMs: number): Error {
  for (const { error } of outcomes) {
    const denied = error === undefined ? undefined : redisCallError(error, { ...site, redlock: true });
    if (denied instanceof LockPermissionDeniedError) return denied;
  }
  const answered = outcomes.filter((o) => o.answered).length;
  return new LockBackendUnavailableError(site.strategy, `${site.operation} on a majority (${answered} of ${outcomes.length} masters answered, ${quorum} needed)`, elapsedMs, {
    key: site.key,
    cause: outcomes.find((o) => o.error !== undefined)?.error,
  });
}
