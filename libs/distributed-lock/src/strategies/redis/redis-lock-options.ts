import type { RedisOptions } from 'ioredis';
import type { LocalHandOverOption } from '../../locking/hand-over-limits';
import type { IoRedisClient } from './redis-client.type';
import type { RedisReplicaAckOptions } from './redis-replica-ack';

/** Options of the single-instance Redis strategy. */
export interface RedisLockStrategyOptions {
  /**
   * Your ioredis `Redis` or `Cluster` (e.g. injected from another module). Never closed by the strategy. A
   * Sentinel-backed `Redis` must be made with `failoverDetector: true` (refused otherwise): see
   * docs/strategies/redis.md, "Failover, measured".
   */
  readonly client?: IoRedisClient;
  /**
   * Or a URL / ioredis options: the strategy creates the client and closes it on shutdown. With Sentinel
   * options (`sentinels`, `name`) the client also gets `failoverDetector: true`, a 100 ms
   * `disconnectTimeout`, reconnections at most 500 ms apart and a reconnection on READONLY, unless you set
   * them: so that no connection stays on a master Sentinel replaced.
   */
  readonly connection?: string | RedisOptions;
  /** Name in messages and events. Default "redis". */
  readonly name?: string;
  /** Prefix of every Redis key the strategy writes. Default "dlock:". */
  readonly namespace?: string;
  /**
   * FIFO hand-over (default true): waiters queue in Redis and a release gives the lock straight to the
   * first live waiter. False: bounded barging, as Go's `sync.Mutex`: waiters queue the same way, but a
   * writer that finds the lock free may take it while the head of the queue has been head for less than
   * `bargeWindowMs`; past that window a release hands the lock to the head. An awake process keeps the lock
   * for a bounded burst instead of waking another process for every section. Readers are served in order.
   * Semaphores (`acquirePermit`) follow it too: with `false`, a request whose weight fits may take free
   * places within the head's window, and past it the head is served first.
   */
  readonly fair?: boolean;
  /**
   * With `fair: false`: the barging window in ms, counted from when the head of the queue became head (or
   * joined, if later). Within it a free lock goes to whoever asks first; past it, to the head. Default 5.
   * Refused with `fair: true` (or `fair` unset), where it would mean nothing.
   */
  readonly bargeWindowMs?: number;
  /**
   * With `fair: false`: lock cohorting. A release passes the lock to the next request of this strategy
   * instance (this process) waiting for the same key, with one script and no message: a new holder and
   * fencing token, as any grant. Only one request of the instance waits in Redis's queue; the others wait
   * in the process. Bounded: at most `passes` in a row (default 64), for at most `windowMs` after the lock
   * came from Redis (default 50), and never once a waiter of another process has been the queue's head for
   * `windowMs`: then the lock goes back to Redis, and the others get their turn. `false`: no passing.
   * Refused with `fair: true`, which serves every waiter in arrival order.
   */
  readonly localHandover?: LocalHandOverOption;
  /**
   * How often a waiter re-checks by itself and refreshes its place in the queue, in ms: the most a lost
   * notification can cost. A waiter that stops refreshing (its process died) leaves the queue after three
   * intervals, and a lock handed to a waiter is reserved for it for three intervals until it claims it
   * (a live waiter claims it at once): a waiter that died in line costs others at most that. Default 500.
   */
  readonly recheckInterval?: number;
  /**
   * Replica acknowledgement: after every acquisition, hand-over and extension, of a lock and of a permit
   * (`acquirePermit`) alike, wait until `replicas` replicas of the key's master have the write (`WAIT
   * replicas timeoutMs`, sent behind the script in the same round trip). A failover to a replica that
   * acknowledged cannot lose the lock or permit. When too few confirm within `timeoutMs` (default 500 ms),
   * the acquisition gives the lock or permit back and fails with `LockNotReplicatedError`
   * (`reason: 'too-few-replicas'`), and an extension fails with it (the watchdog tries again until the
   * lease ends). A server that refuses `WAIT` (some managed services) fails the first use with
   * `reason: 'wait-unsupported'`, and every later one to that server at once (a `WAIT` cut off by a dropped
   * connection fails its call alone). Default: off (replication stays asynchronous).
   * `WAIT` holds the connection until the replicas answer, so every command the client sends meanwhile waits
   * too: one replica round trip per write.
   */
  readonly replicaAck?: RedisReplicaAckOptions;
}
