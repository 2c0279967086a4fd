// The library's engine without its Nest layer, for the worker processes the tests spawn (a few hundred per
// run): the package root also loads Nest (its module, decorators and discovery), which is most of a worker's
// start-up. The same classes as the root exports.
export { LockService } from '@app/distributed-lock/locking/lock-service';
export { LockManager } from '@app/distributed-lock/locking/lock-manager';
export type { Lock } from '@app/distributed-lock/locking/lock-handle';
export type { LockHandle } from '@app/distributed-lock/locking/lock-handle';
export type { PermitHandle } from '@app/distributed-lock/locking/permit-handle';
export { LeaderElection } from '@app/distributed-lock/election/leader-election';
export * from '@app/distributed-lock/errors';
