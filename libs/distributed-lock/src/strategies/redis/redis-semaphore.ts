import { PermitsMismatchError } from '../../errors/permits-mismatch.error';
import { leaseExpiry } from '../../locking/lease-expiry';
import type { PermitGrant, PermitRequest, WaitBudget } from '../../locking/lock-lease';
import { permitGrantOf } from '../../locking/permit-grant';
import type { LeaseLostListener, SemaphoreStrategy } from '../../locking/lock-strategy.interface';
import { budgetAborted } from '../../locking/wait-for-wake';
import type { RedisLockClient } from './redis-client.type';
import type { RedisInbox } from './redis-inbox';
import { RedisGiveBacks } from './redis-give-back';
import { RedisLockKeyNames, redisSemaphoreKeys, type RedisSemaphoreKeys } from './redis-keys';
import { queueCheck, waitInRedisQueue, type RedisQueueCheck } from './redis-queue-wait';
import type { RedisLeaseCheck } from './redis-lease-check';
import type { ReplicaAck } from './redis-replica-ack';
import { RedisScript } from './redis-script';
import { PERMIT_ACQUIRE_SCRIPT, PERMIT_EXTEND_SCRIPT, PERMIT_HELD_SCRIPT, PERMIT_INSPECT_SCRIPT, PERMIT_LEAVE_SCRIPT, PERMIT_RELEASE_SCRIPT, type PermitAcquireArgs } from './redis-semaphore.scripts';
import type { SemaphoreInspection } from '../../locking/lock-query';

/** What the Redis semaphore shares with its strategy: the client, the inbox, the timing of the queue. */
export interface RedisSemaphoreDeps {
  /** The strategy's name, for errors. */
  readonly name: string;
  readonly client: RedisLockClient;
  readonly namespace: string;
  /** Where a release tells this client's waiters that a place is theirs (shared with the fair lock). */
  readonly inbox: RedisInbox;
  /** How often a waiter re-checks and refreshes its place, in ms (`recheckInterval`). */
  readonly recheckMs: number;
  /** How long a waiter stays in line without refreshing, and how long a handed-over place is reserved, in ms. */
  readonly claimMs: number;
  /** The strategy's barging window in ms (`fair: false`); 0 for strict FIFO. */
  readonly bargeMs: number;
  /** The strategy's `replicaAck`: when set, a grant, hand-over or extension counts only once replicas have it. */
  readonly replicaAck?: ReplicaAck;
  /** The strategy's check of every lease held, at each reconnection of the client. */
  readonly leaseCheck: RedisLeaseCheck;
  /** The strategy's error for a failed call: a refused permission becomes `LockPermissionDeniedError` naming the ACL rules. */
  callError(error: unknown, operation: string, key?: string): unknown;
}

/**
 * Counting semaphores in Redis, for `RedisLockStrategy`: a sorted set of holders scored by the server time
 * their lease ends (an expired holder's weight goes back at the next script), a FIFO queue of waiters and
 * the fair lock's hand-over (a release grants the waiters at the head what fits and tells each on its
 * client's inbox), and a fencing token per grant from the semaphore's own counter. Every step is one Lua
 * script. FIFO with `fair: true`; with `fair: false`, bounded barging as the strategy's locks: a request
 * that fits takes free places while the queue's head is within its window, and the head is woken to try.
 */
export class RedisSemaphore implements SemaphoreStrategy {
  readonly signalsServerAnswer = true;
  private readonly keyNames: RedisLockKeyNames<RedisSemaphoreKeys>;
  private readonly scripts = {
    acquire: new RedisScript(PERMIT_ACQUIRE_SCRIPT),
    release: new RedisScript(PERMIT_RELEASE_SCRIPT),
    extend: new RedisScript(PERMIT_EXTEND_SCRIPT),
    leave: new RedisScript(PERMIT_LEAVE_SCRIPT),
    held: new RedisScript(PERMIT_HELD_SCRIPT),
    inspect: new RedisScript(PERMIT_INSPECT_SCRIPT),
  };

  /** Acquisitions whose reply a cut connection lost: what they may have taken is given back. */
  private readonly giveBacks = new RedisGiveBacks();

  constructor(private readonly deps: RedisSemaphoreDeps) {
    this.keyNames = new RedisLockKeyNames(deps.namespace, 1_000, redisSemaphoreKeys);
  }

  /** Drops the give-backs still to come (see RedisGiveBacks). */
  close(): void {
    this.giveBacks.close();
  }

  tryAcquire(request: PermitRequest): Promise<PermitGrant | null> {
    return this.typed('acquire', request.key, async () => {
      const sentAt = Date.now();
      try {
        const check = await this.attempt(this.keyNames.of(request.key), request, false);
        return check.held ? this.grantOf(request, check.token, sentAt, request.ttlMs) : null;
      } catch (error) {
        this.giveBacks.afterFailure(error, () => this.giveBack(request, false), request.ttlMs);
        throw error;
      }
    });
  }

  acquire(request: PermitRequest, budget: WaitBudget): Promise<PermitGrant | null> {
    return this.typed('acquire', request.key, () => this.acquireWaiting(request, budget));
  }

  extend(lease: PermitGrant, ttlMs: number): Promise<PermitGrant | null> {
    return this.typed('extend', lease.key, () => this.extendLease(lease, ttlMs));
  }

  release(lease: PermitGrant): Promise<boolean> {
    return this.typed('release', lease.key, () => this.releaseOwner(this.keyNames.of(lease.key), lease.owner));
  }

  /** Tells the holder when a reconnection finds its permit gone (see RedisLeaseCheck). */
  onLeaseLost(lease: PermitGrant, listener: LeaseLostListener): () => void {
    const keys = this.keyNames.of(lease.key);
    const held = async (): Promise<boolean> => (await this.scripts.held.run(this.deps.client, keys.keys, [lease.owner])) === 1;
    return this.deps.leaseCheck.watch(`permit:${lease.owner}:${lease.key}`, held, listener);
  }

  /**
   * The semaphore's size, live holders and live waiters in queue order (the first 1,000 of each), in one
   * read-only script. Times come from the server's clock, moved onto this process's by the middle of the
   * round trip. The semaphore keeps no grant time.
   */
  inspect(key: string): Promise<SemaphoreInspection> {
    return this.typed('queryPermits', key, async () => {
      const sentAt = Date.now();
      const [now, permits, holders, waiters] = await this.scripts.inspect.run(this.deps.client, this.keyNames.of(key).keys, [1_000]);
      const localNow = Math.round((sentAt + Date.now()) / 2);
      const held: Array<SemaphoreInspection['holders'][number]> = [];
      for (let i = 0; i + 3 < holders.length; i += 4) {
        const token = holders[i + 3];
        held.push({ owner: holders[i], expiresAt: localNow + (Number(holders[i + 1]) - Number(now)), weight: Number(holders[i + 2]), ...(token !== '' ? { fencingToken: Number(token) } : {}) });
      }
      const queued: Array<{ owner: string; weight: number }> = [];
      for (let i = 0; i + 1 < waiters.length; i += 2) queued.push({ owner: waiters[i], weight: Number(waiters[i + 1]) });
      return { ...(permits !== '' ? { permits: Number(permits) } : {}), holders: held, waiters: queued };
    });
  }

  /** Runs one step; its failure goes out as the strategy types it (see `RedisSemaphoreDeps.callError`). */
  private async typed<T>(operation: string, key: string, step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (error) {
      throw this.deps.callError(error, operation, key);
    }
  }

  /** Joins the semaphore's queue and waits until a release hands a place over (see `waitInRedisQueue`). */
  private async acquireWaiting(request: PermitRequest, budget: WaitBudget): Promise<PermitGrant | null> {
    const keys = this.keyNames.of(request.key);
    try {
      const { bargeMs } = this.deps;
      const steps = {
        attempt: (waiter: boolean) => this.attempt(keys, request, waiter),
        leave: async () => {
          const reply = await this.scripts.leave.run(this.deps.client, keys.keys, [request.owner]);
          return reply[0] === 1 ? Number(reply[1]) : undefined;
        },
      };
      const waited = await waitInRedisQueue(this.deps.inbox, request.owner, this.deps.recheckMs, budget, steps, bargeMs > 0 ? bargeMs : undefined);
      if (!waited) return null;
      const grant = waited.handedOver ? await this.takeHandOver(keys, request, waited.token, waited.since) : this.grantOf(request, waited.token, waited.since, request.ttlMs);
      if (!grant || !budgetAborted(budget)) return grant;
      await this.release(grant);
      return null;
    } catch (error) {
      // A call whose reply a cut connection lost may have granted a place, or queued us (see RedisGiveBacks).
      this.giveBacks.afterFailure(error, () => this.giveBack(request, true), request.ttlMs);
      throw error;
    }
  }

  private async extendLease(lease: PermitGrant, ttlMs: number): Promise<PermitGrant | null> {
    const sentAt = Date.now();
    const { client, replicaAck } = this.deps;
    const keys = this.keyNames.of(lease.key).keys;
    const args: [string, number] = [lease.owner, ttlMs];
    // With `replicaAck`, too few confirmations fail the extension: the lease stays where the replicas last had it.
    const extended = replicaAck
      ? await replicaAck.confirm(client, this.scripts.extend, keys, args, { key: lease.key, operation: 'extend', wrote: (reply) => reply === 1 })
      : await this.scripts.extend.run(client, keys, args);
    return extended === 1 ? { ...lease, expiresAt: leaseExpiry(sentAt, ttlMs) } : null;
  }

  /** Ends whatever `request` may hold, after leaving its line if it `waited` (see RedisGiveBacks). */
  private async giveBack(request: PermitRequest, waited: boolean): Promise<void> {
    const keys = this.keyNames.of(request.key);
    if (waited) await this.scripts.leave.run(this.deps.client, keys.keys, [request.owner]);
    await this.releaseOwner(keys, request.owner);
  }

  private async releaseOwner(keys: RedisSemaphoreKeys, owner: string): Promise<boolean> {
    const { inbox } = this.deps;
    const reply = await this.scripts.release.run(this.deps.client, keys.keys, [owner, inbox.channel, this.deps.bargeMs]);
    // Places handed to this client's own waiters (token 0: woken to try, barging): told here, without a message through the server.
    for (let i = 1; i + 1 < reply.length; i += 2) {
      const token = Number(reply[i + 1]);
      if (token === 0) inbox.wake(String(reply[i]));
      else inbox.handOver(String(reply[i]), token);
    }
    return reply[0] === 1;
  }

  /**
   * One acquire script; resolves its check (held with the token, or waiting: see `queueCheck`); throws on a
   * size mismatch. With `replicaAck`, a grant counts only once the replicas have it: one they did not
   * confirm is given back and fails with `LockNotReplicatedError`.
   */
  private async attempt(keys: RedisSemaphoreKeys, request: PermitRequest, waiter: boolean): Promise<RedisQueueCheck> {
    const { client, replicaAck } = this.deps;
    const args: PermitAcquireArgs = [request.owner, request.ttlMs, request.permits, request.weight, waiter ? '1' : '0', this.deps.claimMs, this.deps.inbox.channel, this.deps.bargeMs];
    const giveBack = (): Promise<unknown> => this.releaseOwner(keys, request.owner);
    const reply = replicaAck
      ? await replicaAck.confirm(client, this.scripts.acquire, keys.keys, args, {
          key: request.key,
          operation: 'acquire',
          wrote: (acquired) => acquired[0] === 1,
          giveBack,
          // WAIT failed (refused, or the connection closed under it): give back what the script took (a place, or a place in the queue).
          onWaitFailed: (acquired) => (acquired[0] === 1 ? giveBack() : waiter ? this.scripts.leave.run(client, keys.keys, [request.owner]) : Promise.resolve()),
        })
      : await this.scripts.acquire.run(client, keys.keys, args);
    if (reply[0] === -1) throw new PermitsMismatchError(request.key, this.deps.name, request.permits, Number(reply[1]));
    return queueCheck(reply[0] === 1, Number(reply[1]), Number(reply[2] ?? 0));
  }

  /**
   * A place a release handed to us, reserved for a short claim (see hand_over in the scripts). Without
   * `replicaAck` it is ours at once, for that claim: the lock service extends it to the full lease at once.
   * With it, the claim is first extended to the whole lease with `WAIT` behind (the release's write reached
   * the replicas before ours): resolves null when the claim was gone by then, and gives the place back and
   * fails when too few replicas confirmed.
   */
  private async takeHandOver(keys: RedisSemaphoreKeys, request: PermitRequest, token: number, notBefore: number): Promise<PermitGrant | null> {
    const { client, replicaAck } = this.deps;
    if (!replicaAck) return this.grantOf(request, token, notBefore, Math.min(request.ttlMs, this.deps.claimMs));
    const sentAt = Date.now();
    const reply = await replicaAck.confirm(client, this.scripts.extend, keys.keys, [request.owner, request.ttlMs], {
      key: request.key,
      operation: 'acquire',
      wrote: (extended) => extended === 1,
      giveBack: () => this.releaseOwner(keys, request.owner),
    });
    return reply === 1 ? this.grantOf(request, token, sentAt, request.ttlMs) : null;
  }

  private grantOf(request: PermitRequest, token: number, startedAt: number, leaseMs: number): PermitGrant {
    return permitGrantOf(request, token, leaseExpiry(startedAt, leaseMs));
  }
}
