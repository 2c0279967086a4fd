import { EventEmitter } from 'node:events';
import type { LockLostReason } from '../errors/lock-lost.error';
import type { LockMode } from './lock-lease';

/** Fields common to every lock event. */
export interface LockEventBase {
  readonly strategy: string;
  readonly key: string;
  readonly owner: string;
  readonly mode: LockMode;
}

/** Payloads by event name. Durations in ms. */
export interface LockEventMap {
  acquired: [LockEventBase & { readonly waitedMs: number; readonly fencingToken: number | undefined; readonly reentered: boolean }];
  released: [LockEventBase & { readonly heldMs: number; readonly wasHeld: boolean }];
  extended: [LockEventBase & { readonly expiresAt: number }];
  lost: [LockEventBase & { readonly reason: LockLostReason; readonly heldMs: number }];
  timeout: [{ readonly strategy: string; readonly key: string; readonly waitedMs: number }];
  /** A failure in background work (watchdog, clean-up of a late grant) that no caller is awaiting. */
  backgroundError: [{ readonly strategy: string; readonly key: string; readonly operation: string; readonly error: unknown }];
}

/** Lock lifecycle events, for logs and metrics. One emitter per lock manager. */
export class LockEvents extends EventEmitter<LockEventMap> {}
