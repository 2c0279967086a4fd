import { DistributedLockError } from './distributed-lock.error';

/**
 * Why a write could not be confirmed on replicas: fewer replicas than asked acknowledged it within the
 * timeout, or the server refuses `WAIT` altogether (some managed Redis services).
 */
export type LockNotReplicatedReason = 'too-few-replicas' | 'wait-unsupported';

/**
 * The Redis strategy was asked to wait for replicas (`replicaAck`) and could not get their confirmation
 * that they hold a lock's write. A failed acquisition (or hand-over) has given the lock back; after a failed
 * extension the lease still ends where the replicas last confirmed it (the watchdog tries again).
 */
export class LockNotReplicatedError extends DistributedLockError {
  constructor(
    /** The lock key, with its prefix. */
    readonly key: string,
    /** Name of the strategy that was asked. */
    readonly strategy: string,
    /** What was being confirmed: an acquisition (a hand-over included) or an extension. */
    readonly operation: 'acquire' | 'extend',
    readonly reason: LockNotReplicatedReason,
    /** Replicas that had to acknowledge. */
    readonly replicas: number,
    /** Replicas that did, within the timeout; undefined when the server refused `WAIT`. */
    readonly acknowledged: number | undefined,
    /** How long the server was asked to wait for them, in ms. */
    readonly timeoutMs: number,
    options?: { cause?: unknown },
  ) {
    super(
      reason === 'wait-unsupported'
        ? `Strategy "${strategy}" cannot confirm lock "${key}" on replicas: the Redis server refused WAIT` +
            `${options?.cause instanceof Error ? ` (${options.cause.message})` : ''}. Some managed services disable it. ` +
            'Remove `replicaAck` and guard your writes with the fencing token, or use a server that accepts WAIT.'
        : `Strategy "${strategy}" could not ${operation} lock "${key}": ${acknowledged ?? 0} of the ${replicas} replicas it waits for ` +
            `confirmed the write within ${timeoutMs} ms${operation === 'acquire' ? ', so the lock was given back' : ''}. ` +
            'Check the replicas and their link to the master, or raise `replicaAck.timeoutMs`.',
      options,
    );
  }
}
