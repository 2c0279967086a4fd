// The library's engine without its Nest layer, for the worker processes the tests spawn: the package root
// also loads Nest (its module, decorators and discovery), which takes most of a worker's start-up (about
// 0.7 s of CPU each, with a few hundred workers per run). The same classes as the root exports.
export { LockService } from '@app/distributed-lock/locking/lock-service';
export { LockManager } from '@app/distributed-lock/locking/lock-manager';
export type { Lock } from '@app/distributed-lock/locking/lock-handle';
export type { LockHandle } from '@app/distributed-lock/locking/lock-handle';
export type { PermitHandle } from '@app/distributed-lock/locking/permit-handle';
export { LeaderElection } from '@app/distributed-lock/election/leader-election';
export * from '@app/distributed-lock/errors';
