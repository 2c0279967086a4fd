import type { LockMode } from './lock-lease';

// What `LockService.query` answers: who holds a key and who waits for it, as the backend says right now,
// in the manner of the Web Locks API's `navigator.locks.query()`. For the operator's questions about a
// stuck job or a hanging request (docs/operations.md). A field the backend cannot tell is `null`: never a
// guess.

/** Who holds or waits: the acquisition's owner id, and the host, process and instance it names. */
export interface LockOwnerInfo {
  /** The owner id of the acquisition (`LockHandle.owner`): unique per acquisition. */
  readonly id: string;
  /** The host name of the process that acquired, or null for an owner id of another form. */
  readonly host: string | null;
  /** Its process id, or null for an owner id of another form. */
  readonly pid: number | null;
  /** The `instanceName` its lock manager was given (a pod name, say), or null where none was. */
  readonly instance: string | null;
}

/** One holder of the key: the writer, or one of the readers of a shared lock. */
export interface LockHolderInfo {
  readonly mode: LockMode;
  readonly owner: LockOwnerInfo;
  /** Its fencing token; null where the strategy has no fencing. */
  readonly fencingToken: number | null;
  /** When it was granted (ms since the epoch, this process's clock), or null where the backend keeps no grant time. */
  readonly grantedAt: number | null;
  /** When its lease ends unless extended (ms since the epoch, this process's clock), or null where the backend says not. */
  readonly expiresAt: number | null;
}

/** One request waiting for the key in the backend's queue. */
export interface LockWaiterInfo {
  readonly mode: LockMode;
  readonly owner: LockOwnerInfo;
}

/** The state of one key. */
export interface LockInfo {
  /** The key as the caller gave it (without the service's prefix). */
  readonly key: string;
  /** Its holders: none, one writer, or the readers of a shared lock. */
  readonly held: readonly LockHolderInfo[];
  /**
   * The requests waiting in the backend's queue, in the order it serves them (first first); null where the
   * backend keeps no queue. Requests an instance keeps in its own line behind its first one (lock cohorting,
   * `fair: false`) wait in that process, not in the backend, and only that instance sees them.
   */
  readonly pending: readonly LockWaiterInfo[] | null;
}

/** One page of `LockService.queryPrefix`: the keys under the prefix that are held or waited for now. */
export interface LockPage {
  /** Each such key's state, as `query` gives it, in the backend's order. */
  readonly locks: readonly LockInfo[];
  /** Where the next page starts (pass it as `cursor`), or null on the last page. Opaque: its form is the backend's. */
  readonly next: string | null;
}

/** A page of keys a strategy's `listKeys` found under a prefix. */
export interface KeyListing {
  /** Full keys (with the service's prefix) that someone holds or waits for, in the backend's order. */
  readonly keys: readonly string[];
  /** The cursor of the next page; undefined on the last page. */
  readonly next?: string;
}

/** What a strategy's `inspect` reports of a key: owner ids as stored, times on this process's clock. */
export interface LockInspection {
  readonly holders: ReadonlyArray<{
    readonly owner: string;
    readonly mode: LockMode;
    readonly fencingToken?: number;
    readonly grantedAt?: number;
    readonly expiresAt?: number;
  }>;
  /** undefined: the backend keeps no queue. */
  readonly waiters?: ReadonlyArray<{ readonly owner: string; readonly mode: LockMode }>;
}

/** The answer for `key` (unprefixed) from a strategy's inspection. */
export function lockInfoOf(key: string, inspection: LockInspection): LockInfo {
  return {
    key,
    held: inspection.holders.map((holder) => ({
      mode: holder.mode,
      owner: ownerInfo(holder.owner),
      fencingToken: holder.fencingToken ?? null,
      grantedAt: holder.grantedAt ?? null,
      expiresAt: holder.expiresAt ?? null,
    })),
    pending: inspection.waiters ? inspection.waiters.map((waiter) => ({ mode: waiter.mode, owner: ownerInfo(waiter.owner) })) : null,
  };
}

/** One holder of a semaphore's permits. */
export interface PermitHolderInfo {
  readonly owner: LockOwnerInfo;
  /** How many of the semaphore's places it holds. */
  readonly weight: number;
  /** Its fencing token; null where the strategy has no fencing. */
  readonly fencingToken: number | null;
  /** When it was granted (ms since the epoch, this process's clock), or null where the backend keeps no grant time. */
  readonly grantedAt: number | null;
  /** When its lease ends unless extended (ms since the epoch, this process's clock), or null where the backend says not. */
  readonly expiresAt: number | null;
}

/** One request waiting for places of the semaphore in the backend's queue. */
export interface PermitWaiterInfo {
  readonly owner: LockOwnerInfo;
  readonly weight: number;
}

/** The state of one semaphore (`LockService.queryPermits`). */
export interface PermitsInfo {
  /** The semaphore's key as the caller gave it (without the service's prefix). */
  readonly key: string;
  /** Its size, as the backend keeps it; null when the backend has forgotten it (nobody holds or waits) or keeps none. */
  readonly permits: number | null;
  /** The places taken now: the holders' weights, summed. */
  readonly inUse: number;
  readonly held: readonly PermitHolderInfo[];
  /** The requests waiting in the backend's queue, first served first; null where the backend keeps no queue (it is polled). */
  readonly pending: readonly PermitWaiterInfo[] | null;
}

/** What a semaphore's `inspect` reports of a key: owner ids as stored, times on this process's clock. */
export interface SemaphoreInspection {
  /** undefined: the backend does not know it now. */
  readonly permits?: number;
  readonly holders: ReadonlyArray<{
    readonly owner: string;
    readonly weight: number;
    readonly fencingToken?: number;
    readonly grantedAt?: number;
    readonly expiresAt?: number;
  }>;
  /** undefined: the backend keeps no queue. */
  readonly waiters?: ReadonlyArray<{ readonly owner: string; readonly weight: number }>;
}

/** The answer for semaphore `key` (unprefixed) from a semaphore's inspection. */
export function permitsInfoOf(key: string, inspection: SemaphoreInspection): PermitsInfo {
  const held = inspection.holders.map((holder) => ({
    owner: ownerInfo(holder.owner),
    weight: holder.weight,
    fencingToken: holder.fencingToken ?? null,
    grantedAt: holder.grantedAt ?? null,
    expiresAt: holder.expiresAt ?? null,
  }));
  return {
    key,
    permits: inspection.permits ?? null,
    inUse: held.reduce((sum, holder) => sum + holder.weight, 0),
    held,
    pending: inspection.waiters ? inspection.waiters.map((waiter) => ({ owner: ownerInfo(waiter.owner), weight: waiter.weight })) : null,
  };
}

/** Reads the host, pid and instance from an owner id made by `OwnerIds` ("host:pid[:instance]:uuid"). */
export function ownerInfo(id: string): LockOwnerInfo {
  const match = /^([^:]+):(\d+):(?:([A-Za-z0-9._-]{1,64}):)?[0-9a-f-]{36}$/.exec(id);
  return match ? { id, host: match[1], pid: Number(match[2]), instance: match[3] ?? null } : { id, host: null, pid: null, instance: null };
}
