import type { HandOverLimits } from '../../locking/hand-over-limits';
import type { LeaseGrant, LockRequest } from '../../locking/lock-lease';
import { newAcquisitionId } from './redlock-acquisition-id';

/**
 * One Redlock acquisition on the masters, held in turn by this process's contenders for its key. The
 * masters store `redisOwner`, the acquisition id of its current holder (see redlock-acquisition-id.ts); a
 * hand-over renames it to the successor's in the round that confirms the lock.
 */
interface Cohort {
  redisOwner: string;
  /** When the masters granted it: hand-overs stop after `windowMs`, so other processes get their turn. */
  readonly since: number;
  /** The caller's owner id of the current holder. */
  holder: string;
  validUntil: number;
  passes: number;
  /** False once the masters refused an extension: the lock may be gone, it is not handed on. */
  valid: boolean;
}

/** A local contender for a key, waiting in line (or, first in line, asking the masters). */
export interface Successor {
  readonly request: LockRequest;
  deliver(grant: LeaseGrant): void;
}


/**
 * Lock cohorting (Dice, Marathe and Shavit, 2012) for Redlock: a holder that releases while another
 * contender of this process waits for the same key hands the lock straight to it, without giving it back
 * to the masters and taking it again; the masters' keys stay set, renamed to the successor's acquisition
 * id in the one round that confirms the lock (so that `LockService.query` names the holder of now, not the
 * first of the run). Mutual exclusion
 * between processes is the masters' as before; within the process, one holder at a time is kept here.
 * Bounded so that other processes are not starved: after `passes` hand-overs, or `windowMs` after the
 * masters granted it, the lock goes back to the masters. A hand-over also needs the remaining validity
 * to cover two thirds of the next holder's lease; its watchdog extends it from there.
 */
export class RedlockLocalHandOver {
  private readonly cohorts = new Map<string, Cohort>();
  /** Per key, this process's waiters in arrival order: a hand-over goes to the first. */
  private readonly successors = new Map<string, Successor[]>();

  constructor(private readonly limits: HandOverLimits) {}

  /** A fresh id to store on the masters for one acquisition by `owner` (see redlock-acquisition-id.ts). */
  newRedisOwner(owner: string): string {
    return newAcquisitionId(owner);
  }

  /** The masters granted `request` under `redisOwner`: it is the key's holder here. */
  begin(request: LockRequest, redisOwner: string, grantedAt: number, validUntil: number): void {
    this.cohorts.set(request.key, { redisOwner, since: grantedAt, holder: request.owner, validUntil, passes: 0, valid: true });
  }

  /** True while a contender of this process holds `key` on a live lease: asking the masters would fail. */
  heldHere(key: string): boolean {
    const cohort = this.cohorts.get(key);
    return cohort !== undefined && cohort.valid && cohort.validUntil > Date.now();
  }

  /** The masters' id of the lock `lease` holds, or undefined if that lease no longer holds it here. */
  redisOwnerOf(lease: LeaseGrant): string | undefined {
    const cohort = this.cohorts.get(lease.key);
    return cohort?.holder === lease.owner ? cohort.redisOwner : undefined;
  }

  /** The masters extended the lock that `lease` holds. */
  extended(lease: LeaseGrant, validUntil: number): void {
    const cohort = this.cohorts.get(lease.key);
    if (cohort?.holder === lease.owner) cohort.validUntil = validUntil;
  }

  /** The masters refused to extend the lock `lease` holds: it is not handed on (its release still cleans up). */
  lost(lease: LeaseGrant): void {
    const cohort = this.cohorts.get(lease.key);
    if (cohort?.holder === lease.owner) cohort.valid = false;
  }

  /**
   * `lease` releases: the waiting local successor it may hand the lock to, or undefined, in which case
   * the key is forgotten here (the caller releases on the masters). The masters must confirm the lock
   * (one round that extends it for the successor's lease under the successor's id, see `handOver`) before
   * it is handed on.
   */
  successorOf(lease: LeaseGrant): Successor | undefined {
    const cohort = this.cohorts.get(lease.key);
    if (cohort?.holder !== lease.owner) return undefined;
    const next = this.successors.get(lease.key)?.[0];
    const now = Date.now();
    const allowed =
      next !== undefined &&
      cohort.valid &&
      cohort.passes < this.limits.passes &&
      now - cohort.since < this.limits.windowMs &&
      cohort.validUntil - now >= (next.request.ttlMs * 2) / 3;
    if (!allowed) {
      this.cohorts.delete(lease.key);
      return undefined;
    }
    return next;
  }

  /**
   * The masters confirmed the lock until `validUntil`, under `redisOwner` (the successor's acquisition id):
   * `lease`'s holder hands it to `next`. False if either left meanwhile.
   */
  handOver(lease: LeaseGrant, next: Successor, validUntil: number, redisOwner: string): boolean {
    const cohort = this.cohorts.get(lease.key);
    if (cohort?.holder !== lease.owner || this.successors.get(lease.key)?.[0] !== next) return false;
    this.unlist(lease.key, next);
    cohort.redisOwner = redisOwner;
    cohort.holder = next.request.owner;
    cohort.passes += 1;
    cohort.validUntil = validUntil;
    const { key, owner, mode } = next.request;
    next.deliver({ key, owner, mode, expiresAt: validUntil });
    return true;
  }

  /** Forgets `lease`'s key here (the masters did not confirm it, or it goes back to them). */
  forget(lease: LeaseGrant): void {
    if (this.cohorts.get(lease.key)?.holder === lease.owner) this.cohorts.delete(lease.key);
  }

  /**
   * `request` waits for its key here until the returned function is called; `deliver` is called
   * (synchronously, at most once) if a holder hands the lock over to it meanwhile. Waiters are served in
   * the order they called this, whether or not they are already asking the masters.
   */
  awaitHandover(request: LockRequest, deliver: (grant: LeaseGrant) => void): () => void {
    const successor: Successor = { request, deliver };
    const line = this.successors.get(request.key);
    if (line) line.push(successor);
    else this.successors.set(request.key, [successor]);
    return () => this.unlist(request.key, successor);
  }

  private unlist(key: string, successor: Successor): void {
    const line = this.successors.get(key);
    const index = line?.indexOf(successor) ?? -1;
    if (!line || index < 0) return;
    line.splice(index, 1);
    if (line.length === 0) this.successors.delete(key);
  }
}
