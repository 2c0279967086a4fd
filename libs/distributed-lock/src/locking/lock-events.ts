import { EventEmitter } from 'node:events';
import type { LockLostReason } from '../errors/lock-lost.error';
import type { LeaseGrant, LockMode, PermitGrant } from './lock-lease';

/** Fields common to every lock event. */
export interface LockEventBase {
  readonly strategy: string;
  readonly key: string;
  readonly owner: string;
  readonly mode: LockMode;
  /** Set for a permit of a semaphore (`acquirePermit`): the semaphore's size. Undefined for a lock. */
  readonly permits?: number;
  /** Set for a permit: how many of the semaphore's places it holds. */
  readonly weight?: number;
}

/** The `permits` and `weight` of an event about a permit; nothing for a lock. */
export function permitFields(grant: LeaseGrant): { permits?: number; weight?: number } {
  if (!('permits' in grant)) return {};
  const { permits, weight } = grant as PermitGrant;
  return { permits, weight };
}

/** Payloads by event name. Durations in ms. */
export interface LockEventMap {
  acquired: [LockEventBase & { readonly waitedMs: number; readonly fencingToken: number | undefined; readonly reentered: boolean }];
  released: [LockEventBase & { readonly heldMs: number; readonly wasHeld: boolean }];
  extended: [LockEventBase & { readonly expiresAt: number }];
  lost: [LockEventBase & { readonly reason: LockLostReason; readonly heldMs: number }];
  timeout: [{ readonly strategy: string; readonly key: string; readonly waitedMs: number }];
  /**
   * An operator broke a lock (`LockService.breakLock`): why, and the owner ids of the holds it ended. `owners`
   * is null, and `error` set, when the break failed on its way: some holds may have ended (see `query`).
   */
  broken: [{ readonly strategy: string; readonly key: string; readonly reason: string; readonly owners: readonly string[] | null; readonly error?: unknown }];
  /** A failure in background work (watchdog, clean-up of a late grant) that no caller is awaiting. */
  backgroundError: [{ readonly strategy: string; readonly key: string; readonly operation: string; readonly error: unknown }];
}

/** Lock lifecycle events, for logs and metrics. One emitter per lock manager. */
export class LockEvents extends EventEmitter<LockEventMap> {}
