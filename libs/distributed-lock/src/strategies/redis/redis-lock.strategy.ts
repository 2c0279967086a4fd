import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { LockNotReplicatedError } from '../../errors/lock-not-replicated.error';
import type { LeaseGrant, LockRequest, WaitBudget } from '../../locking/lock-lease';
import type { KeyListing, LockInspection } from '../../locking/lock-query';
import { assertDuration, assertKnownKeys, describe } from '../../locking/lock-options';
import { handOverLimits, type HandOverLimits } from '../../locking/hand-over-limits';
import type { LeaseLostListener, LockStrategy, LockStrategyCapabilities, TransferOutcome } from '../../locking/lock-strategy.interface';
import { RedisChannelListener } from './redis-channel-listener';
import { RedisInbox } from './redis-inbox';
import type { RedisLockClient } from './redis-client.type';
import { resolveRedisClient } from './redis-connection';
import { RedisLockKeyNames, type RedisLockKeys } from './redis-keys';
import { ACQUIRE_SCRIPT, EXTEND_SCRIPT, HELD_SCRIPT, LEAVE_QUEUE_SCRIPT, RELEASE_SCRIPT, TRANSFER_SCRIPT, type AcquireArgs, type AcquireReply } from './redis-lock.scripts';
import { RedisLockOperator } from './redis-lock-operator';
import { RedisGiveBacks } from './redis-give-back';
import { RedisLeaseCheck } from './redis-lease-check';
import { RedisSentinelWatch, sentinelOptionsOf } from './redis-sentinel-watch';
import { RedisScript } from './redis-script';
import { RedisSemaphore } from './redis-semaphore';
import { ReplicaAck } from './redis-replica-ack';
import type { RedisLockStrategyOptions } from './redis-lock-options';
import { leaseExpiry } from '../../locking/lease-expiry';
import { budgetAborted } from '../../locking/wait-for-wake';
import { queueCheck, waitInRedisQueue } from './redis-queue-wait';
import { closeRedisClient } from './close-redis-client';
import { strategyName } from '../strategy-name';
import { loginRefusalOf, watchLoginRefusals } from './redis-login-refusal';
import { redisCallError } from './redis-acl';

export type { RedisLockStrategyOptions } from './redis-lock-options';

/** Redis semaphores queue (FIFO in fair mode, bounded barging otherwise); every grant takes a token from the semaphore's counter. */
const FAIR_SEMAPHORES = Object.freeze({ fifo: true, fencing: true });
const BARGING_SEMAPHORES = Object.freeze({ fifo: false, fencing: true });

const OPTION_KEYS = ['client', 'connection', 'name', 'namespace', 'fair', 'bargeWindowMs', 'localHandover', 'recheckInterval', 'replicaAck'];

/** The barging window when `fair: false` and `bargeWindowMs` is not set, in ms. */
const DEFAULT_BARGE_WINDOW_MS = 5;

/**
 * Locks in one Redis server (or one Redis Cluster slot per key). Acquire, release and extend are each
 * one Lua script, owner-checked; fencing tokens come from a per-key counter in the same script. In fair
 * mode waiters are served in arrival order: a release hands the lock to the first live waiter and tells
 * it on its instance's own channel (see RedisInbox). In barging mode waiters queue the same way, but a
 * free lock goes to whoever asks first while the head is within its window (the head is woken to ask),
 * and to the head past it (see ACQUIRE_SCRIPT).
 *
 * Not safe against failover by default: Redis replicates asynchronously, so a lock written to a master that
 * dies before replicating is lost, and a second holder can get it from the promoted replica; the first is
 * told as soon as its client reaches that replica (every lease is checked again at each reconnection, and a
 * Sentinel client moves as soon as Sentinel names the replica). Use the fencing token to reject the stale
 * holder's writes, `replicaAck` to wait for replicas, or ZooKeeper/etcd where correctness depends on the lock.
 */
export class RedisLockStrategy implements LockStrategy {
  readonly name: string;
  readonly capabilities: LockStrategyCapabilities;
  readonly signalsServerAnswer = true;
  /** Counting semaphores (`LockService.acquirePermit`): FIFO, or bounded barging with `fair: false`; leased, fenced. */
  readonly semaphore: RedisSemaphore;
  private readonly client: RedisLockClient;
  private readonly ownsClient: boolean;
  private readonly keyNames: RedisLockKeyNames;
  private readonly fair: boolean;
  /** The barging window in ms sent to the scripts; 0 in fair mode (strict hand-over). */
  private readonly bargeMs: number;
  private readonly recheckMs: number;
  /**
   * How long a queued waiter stays in line without refreshing its place (three re-checks), and how long a
   * lock handed to it is reserved before it claims it: a dead waiter costs this much, not a whole lease.
   */
  private readonly claimMs: number;
  private readonly listener: RedisChannelListener;
  /** Where releases tell this client's waiters (fair mode) that the lock is theirs. */
  private readonly inbox: RedisInbox;
  /** Waits for replicas after each write of a lock, when `replicaAck` is set. */
  private readonly replicaAck: ReplicaAck | undefined;
  /** Checks every lease held (locks and permits) again when the client reconnects, maybe to another server. */
  private readonly leaseCheck: RedisLeaseCheck;
  /** Acquisitions whose reply a cut connection lost: what they may have taken is given back. */
  private readonly giveBacks = new RedisGiveBacks();
  /** With a Sentinel-backed client: moves the connection to the promoted replica as soon as Sentinel names it. */
  private readonly sentinelWatch: RedisSentinelWatch | undefined;
  private readonly scripts = {
    acquire: new RedisScript(ACQUIRE_SCRIPT),
    release: new RedisScript(RELEASE_SCRIPT),
    extend: new RedisScript(EXTEND_SCRIPT),
    leave: new RedisScript(LEAVE_QUEUE_SCRIPT),
    held: new RedisScript(HELD_SCRIPT),
    transfer: new RedisScript(TRANSFER_SCRIPT),
  };
  /**
   * Lock cohorting (`localHandover`, barging mode only): the engine passes a released lock to the next
   * contender of this instance with `transfer`, within these limits. Absent in fair mode.
   */
  readonly handOverLimits?: HandOverLimits;
  readonly transfer?: (lease: LeaseGrant, next: LockRequest) => Promise<TransferOutcome>;
  /** The operator's calls (`query`, `queryPrefix`, `breakLock`): see RedisLockOperator. */
  readonly inspect: (key: string) => Promise<LockInspection>;
  readonly listKeys: (prefix: string, page: { readonly cursor?: string; readonly limit: number }) => Promise<KeyListing>;
  readonly breakLock: (key: string) => Promise<LockInspection['holders']>;

  constructor(options: RedisLockStrategyOptions) {
    const raw: unknown = options;
    assertKnownKeys(raw, OPTION_KEYS, 'RedisLockStrategy options');
    if (options.namespace !== undefined && (typeof options.namespace !== 'string' || /[{}\s]/.test(options.namespace))) {
      throw new InvalidLockOptionsError('namespace', 'expected a string without braces or spaces, e.g. "dlock:".');
    }
    if (options.fair !== undefined && typeof options.fair !== 'boolean') {
      throw new InvalidLockOptionsError('fair', `expected true or false, got ${describe(options.fair)}.`);
    }
    this.name = strategyName(options.name, 'redis');
    this.keyNames = new RedisLockKeyNames(options.namespace ?? 'dlock:');
    this.fair = options.fair ?? true;
    if (this.fair && options.bargeWindowMs !== undefined) {
      throw new InvalidLockOptionsError('bargeWindowMs', 'applies only with fair: false (bounded barging); remove it, or set fair: false.');
    }
    this.recheckMs = assertDuration(options.recheckInterval ?? 500, 'recheckInterval', 10);
    this.bargeMs = this.fair ? 0 : assertDuration(options.bargeWindowMs === undefined ? DEFAULT_BARGE_WINDOW_MS : options.bargeWindowMs, 'bargeWindowMs', 1);
    // A head woken once per turn checks again after the window: a window past the re-check would leave a free
    // lock waiting for the re-check instead (see waitInRedisQueue's afterWakeMs).
    if (this.bargeMs >= this.recheckMs) {
      throw new InvalidLockOptionsError('bargeWindowMs', `expected less than recheckInterval (${this.recheckMs} ms), got ${this.bargeMs}; a few ms is the intent.`);
    }
    this.claimMs = this.recheckMs * 3;
    if (this.fair && options.localHandover !== undefined) {
      throw new InvalidLockOptionsError('localHandover', 'applies only with fair: false (bounded barging); fair mode serves every waiter in arrival order.');
    }
    const limits = this.fair ? undefined : handOverLimits(options.localHandover);
    // No passes, or a window of 0 ms (every pass would be past it): no line, no passing.
    if (limits && limits.passes > 0 && limits.windowMs > 0) {
      this.handOverLimits = limits;
      this.transfer = (lease, next) => this.passOn(lease, next, limits);
    }
    this.replicaAck = options.replicaAck === undefined ? undefined : new ReplicaAck(options.replicaAck, this.name);
    const resolved = resolveRedisClient(options.client, options.connection, this.name, 'RedisLockStrategy options');
    this.client = resolved.client;
    this.ownsClient = resolved.owned;
    watchLoginRefusals(this.client);
    this.listener = new RedisChannelListener(this.name, () => this.client.duplicate());
    this.inbox = new RedisInbox(this.listener, this.keyNames.namespace, !this.fair);
    this.leaseCheck = new RedisLeaseCheck(this.client);
    const sentinel = sentinelOptionsOf(this.client);
    this.sentinelWatch = sentinel && new RedisSentinelWatch(sentinel, this.name, () => this.leaveOldMaster());
    this.capabilities = Object.freeze({ fencing: true, fifo: this.fair, sharedLocks: true, crossProcess: true, semaphores: this.fair ? FAIR_SEMAPHORES : BARGING_SEMAPHORES });
    this.semaphore = new RedisSemaphore({
      name: this.name,
      client: this.client,
      namespace: this.keyNames.namespace,
      inbox: this.inbox,
      recheckMs: this.recheckMs,
      claimMs: this.claimMs,
      bargeMs: this.bargeMs,
      replicaAck: this.replicaAck,
      leaseCheck: this.leaseCheck,
      callError: (error, operation, key) => this.callError(error, operation, key),
    });
    const operator = new RedisLockOperator({ name: this.name, client: this.client, keyNames: this.keyNames, release: this.scripts.release, bargeMs: this.bargeMs, callError: (error, operation, key) => this.callError(error, operation, key) });
    this.inspect = (key) => operator.inspect(key);
    this.listKeys = (prefix, page) => operator.listKeys(prefix, page);
    this.breakLock = (key) => operator.breakLock(key);
  }

  async tryAcquire(request: LockRequest): Promise<LeaseGrant | null> {
    const keys = this.keyNames.of(request.key);
    const sentAt = Date.now();
    try {
      const [held, token] = await this.runAcquire(keys, request, false);
      return held ? this.grantOf(request, token, sentAt) : null;
    } catch (error) {
      this.giveBacks.afterFailure(error, () => this.giveBack(request.key, request.owner, false), request.ttlMs);
      throw this.callError(error, 'acquire', request.key);
    }
  }

  async acquire(request: LockRequest, budget: WaitBudget): Promise<LeaseGrant | null> {
    const keys = this.keyNames.of(request.key);
    try {
      return await this.waitInLine(keys, request, budget);
    } catch (error) {
      this.giveBacks.afterFailure(error, () => this.giveBack(request.key, request.owner, true), request.ttlMs);
      throw this.callError(error, 'acquire', request.key);
    }
  }

  /**
   * Join the key's queue and wait until a release hands the lock over (told on this client's inbox),
   * re-checking every `recheckInterval` in case the message was lost. In barging mode a release within the
   * head's window wakes it instead, and its next check takes the free lock unless another took it first.
   */
  private async waitInLine(keys: RedisLockKeys, request: LockRequest, budget: WaitBudget): Promise<LeaseGrant | null> {
    const waited = await waitInRedisQueue(this.inbox, request.owner, this.recheckMs, budget, {
      attempt: async (waiter) => queueCheck(...(await this.runAcquire(keys, request, waiter))),
      leave: async () => {
        const reply = await this.scripts.leave.run(this.client, keys.keys, [request.owner, keys.channel, '0', this.bargeMs]);
        return reply[0] === 1 ? Number(reply[1]) : undefined;
      },
    }, this.fair ? undefined : this.bargeMs);
    if (!waited) return null;
    // A hand-over is taken as `takeHandOver` says (with `replicaAck`, once the replicas have it).
    const grant = waited.handedOver ? await this.takeHandOver(keys, request, waited.token, waited.since) : this.grantOf(request, waited.token, waited.since);
    // Handed over as the caller aborted: it goes back at once.
    if (!grant || !budgetAborted(budget)) return grant;
    await this.release(grant);
    return null;
  }

  async extend(lease: LeaseGrant, ttlMs: number): Promise<LeaseGrant | null> {
    const keys = this.keyNames.of(lease.key);
    const sentAt = Date.now();
    const args: [string, string, number] = [lease.owner, keys.channel, ttlMs];
    try {
      if (!this.replicaAck) {
        const extended = await this.scripts.extend.run(this.client, keys.keys, args);
        return extended === 1 ? { ...lease, expiresAt: leaseExpiry(sentAt, ttlMs) } : null;
      }
      // Too few confirmations fail the extension: a promoted replica would end the lease where it last confirmed it.
      const reply = await this.replicaAck.confirm(this.client, this.scripts.extend, keys.keys, args, {
        key: lease.key,
        operation: 'extend',
        wrote: (extended) => extended === 1,
      });
      return reply === 1 ? { ...lease, expiresAt: leaseExpiry(sentAt, ttlMs) } : null;
    } catch (error) {
      throw this.callError(error, 'extend', lease.key);
    }
  }

  async release(lease: LeaseGrant): Promise<boolean> {
    try {
      return await this.releaseOwner(this.keyNames.of(lease.key), lease.owner);
    } catch (error) {
      throw this.callError(error, 'release', lease.key);
    }
  }

  /** Ends whatever `owner` may hold of `key` (all of it), after leaving its line if it `waited` (see RedisGiveBacks). */
  private async giveBack(key: string, owner: string, waited: boolean): Promise<void> {
    const keys = this.keyNames.of(key);
    if (waited) await this.scripts.leave.run(this.client, keys.keys, [owner, keys.channel, '0', this.bargeMs]);
    await this.scripts.release.run(this.client, keys.keys, [owner, keys.channel, '0', this.bargeMs, '1']);
  }

  private async releaseOwner(keys: RedisLockKeys, owner: string): Promise<boolean> {
    // Nobody listens on the key's channel (waiters hear on their inboxes): announce nothing there.
    return (await this.scripts.release.run(this.client, keys.keys, [owner, keys.channel, '0', this.bargeMs])) === 1;
  }

  /**
   * Passes the writer's lock to `next`, a contender of this instance (see `localHandover`): 'released' when a
   * waiter of another process has been head of the queue for the window, and the lock went back to Redis.
   */
  private async passOn(lease: LeaseGrant, next: LockRequest, limits: HandOverLimits): Promise<TransferOutcome> {
    const keys = this.keyNames.of(lease.key);
    const sentAt = Date.now();
    const args: [string, string, number, number] = [lease.owner, next.owner, next.ttlMs, Math.max(1, limits.windowMs)];
    try {
      const reply = this.replicaAck
        ? await this.replicaAck.confirm(this.client, this.scripts.transfer, keys.keys, args, {
            key: lease.key,
            // The successor's acquisition: too few confirmations give it back and fail it.
            operation: 'acquire',
            wrote: (passed) => passed[0] === 1,
            giveBack: () => this.releaseOwner(keys, next.owner),
          })
        : await this.scripts.transfer.run(this.client, keys.keys, args);
      if (reply[0] === 1) return this.grantOf(next, Number(reply[1]), sentAt);
      if (reply[0] === 0) return null;
      return (await this.releaseOwner(keys, lease.owner)) ? 'released' : null;
    } catch (error) {
      // Too few replicas confirmed the pass (given back already), or the server refuses WAIT (the script never
      // ran): the holder's release is still owed, as a plain release (harmless when the lock was passed).
      if (!(error instanceof LockNotReplicatedError)) throw this.callError(error, 'release', lease.key);
    }
    try {
      await this.releaseOwner(keys, lease.owner);
      return 'released';
    } catch (error) {
      throw this.callError(error, 'release', lease.key);
    }
  }

  /**
   * Tells the holder when a reconnection finds its lock gone (see RedisLeaseCheck): after a failover to a
   * replica the grant had not reached, the holder learns it as soon as its client reaches the new master.
   */
  onLeaseLost(lease: LeaseGrant, listener: LeaseLostListener): () => void {
    const keys = this.keyNames.of(lease.key);
    const held = async (): Promise<boolean> => (await this.scripts.held.run(this.client, keys.keys, [lease.owner])) === 1;
    return this.leaseCheck.watch(`lock:${lease.owner}:${lease.key}`, held, listener);
  }

  async ping(): Promise<void> {
    try {
      await this.client.ping();
    } catch (error) {
      throw this.callError(error, 'ping');
    }
  }

  /** A refused permission becomes `LockPermissionDeniedError` naming the ACL rules to grant; credentials never travel on. */
  private callError(error: unknown, operation: string, key?: string): unknown {
    return redisCallError(error, { strategy: this.name, namespace: this.keyNames.namespace, operation, key }, loginRefusalOf(this.client));
  }

  /**
   * Sentinel started naming a promoted replica: the connection is dropped and made again, to the master
   * Sentinel names now, where RedisLeaseCheck checks every lease held. Commands on their way are sent
   * again there by ioredis.
   */
  private leaveOldMaster(): void {
    if (this.client.status === 'ready' || this.client.status === 'connect') this.client.disconnect(true);
  }

  async close(): Promise<void> {
    this.giveBacks.close();
    this.semaphore.close();
    this.sentinelWatch?.close();
    this.leaseCheck.close();
    await this.listener.close();
    if (this.ownsClient) await closeRedisClient(this.client);
  }

  /**
   * One acquire script: [held, token, server µs] (a waiter not held: the writer's token and the server's
   * clock, see `queueCheck`). With `replicaAck`, a grant counts only once the replicas confirmed it; one
   * they did not is given back and fails with `LockNotReplicatedError`.
   */
  private async runAcquire(keys: RedisLockKeys, request: LockRequest, waiter: boolean): Promise<[boolean, number, number]> {
    const args: AcquireArgs = [request.owner, keys.channel, request.ttlMs, this.bargeMs, waiter ? '1' : '0', this.claimMs, request.mode === 'shared' ? 's' : 'x', this.inbox.channel];
    if (!this.replicaAck) {
      const [held, token, serverUs] = await this.scripts.acquire.run(this.client, keys.keys, args);
      return [held === 1, Number(token), Number(serverUs ?? 0)];
    }
    // WAIT failed (refused, or the connection closed under it): give back what the script took (the lock, or a place in the queue) before failing.
    const giveBack = (reply: AcquireReply): Promise<unknown> =>
      reply[0] === 1 ? this.releaseOwner(keys, request.owner) : waiter ? this.scripts.leave.run(this.client, keys.keys, [request.owner, keys.channel, '0', this.bargeMs]) : Promise.resolve();
    const [held, token, serverUs] = await this.replicaAck.confirm(this.client, this.scripts.acquire, keys.keys, args, {
      key: request.key,
      operation: 'acquire',
      wrote: (acquired) => acquired[0] === 1,
      giveBack: () => this.releaseOwner(keys, request.owner),
      onWaitFailed: giveBack,
    });
    return [held === 1, Number(token), Number(serverUs ?? 0)];
  }

  /**
   * A lock a release handed to us. Without `replicaAck` it is ours at once (see `handedOverGrant`). With it,
   * the claim is first extended to the whole lease with `WAIT` behind (the release's write reached the
   * replicas before ours, which they acknowledge): resolves null when the claim was gone by then, and gives
   * the lock back and fails when too few replicas confirmed.
   */
  private async takeHandOver(keys: RedisLockKeys, request: LockRequest, token: number, notBefore: number): Promise<LeaseGrant | null> {
    if (!this.replicaAck) return this.handedOverGrant(request, token, notBefore);
    const sentAt = Date.now();
    const reply = await this.replicaAck.confirm(this.client, this.scripts.extend, keys.keys, [request.owner, keys.channel, request.ttlMs], {
      key: request.key,
      operation: 'acquire',
      wrote: (extended) => extended === 1,
      giveBack: () => this.releaseOwner(keys, request.owner),
    });
    return reply === 1 ? this.grantOf(request, token, sentAt) : null;
  }

  /**
   * A lock a release handed to us while we waited: it is reserved for a short claim (see hand_over in the
   * scripts), counted from before the hand-over could have happened. Its lease is shorter than asked, so
   * the lock service extends it to the full lease at once (see LeaseWatchdog).
   */
  private handedOverGrant(request: LockRequest, token: number, notBefore: number): LeaseGrant {
    return this.grantOf(request, token, notBefore, Math.min(request.ttlMs, this.claimMs));
  }

  private grantOf(request: LockRequest, token: number, startedAt: number, leaseMs = request.ttlMs): LeaseGrant {
    return { key: request.key, owner: request.owner, mode: request.mode, fencingToken: token, expiresAt: leaseExpiry(startedAt, leaseMs) };
  }
}
