import type { HeldLock } from './held-lock';
import { LockHandle } from './lock-handle';
import type { PermitGrant } from './lock-lease';

/**
 * A permit of a counting semaphore: `weight` of its `permits` places, held with a lease of its own (kept
 * alive by the watchdog like a lock's). Returned by `LockService.acquirePermit`. `signal` aborts with a
 * `LockLostError` the moment the permit is known lost; `fencingToken` (where the strategy's semaphores
 * have fencing) strictly increases per semaphore in the order of the grants.
 */
export class PermitHandle extends LockHandle {
  /** @internal */
  constructor(held: HeldLock) {
    super(held, false);
  }

  /** The semaphore's size. */
  get permits(): number {
    return (this.grant as PermitGrant).permits;
  }

  /** How many of its places this permit holds. */
  get weight(): number {
    return (this.grant as PermitGrant).weight;
  }
}
