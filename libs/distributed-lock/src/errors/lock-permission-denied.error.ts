import { DistributedLockError } from './distributed-lock.error';

/**
 * The server answered, and refused: the identity the strategy connects as lacks a permission the lock
 * needs (a ZooKeeper ACL without it, an etcd role without the lock prefix). Retrying does not help;
 * `grant` says what to give that identity. The server's own answer is the `cause`. Never carries a
 * password or a digest: only the user name, the path or prefix, and the permission.
 */
export class LockPermissionDeniedError extends DistributedLockError {
  constructor(
    readonly strategy: string,
    /** What was being done: "acquire", "release", "extend", "ping". */
    readonly operation: string,
    /** What to grant, and to whom, in the backend's own terms (e.g. an `etcdctl role grant-permission` line). */
    readonly grant: string,
    options?: { cause?: unknown; key?: string },
  ) {
    super(`Strategy "${strategy}" was refused permission to ${operation}${options?.key ? ` "${options.key}"` : ''}. Grant: ${grant}`, options);
    this.key = options?.key;
  }
  /** The lock key involved, when there was one. */
  readonly key: string | undefined;
}
