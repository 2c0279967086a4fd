import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { LockNotReplicatedError } from '../../errors/lock-not-replicated.error';
import { assertDuration, assertKnownKeys, describe } from '../../locking/lock-options';
import type { RedisLockClient } from './redis-client.type';
import { keyServerOf } from './redis-key-pipeline';
import type { RedisScript, ScriptArgs } from './redis-script';

/** Replica acknowledgement of the Redis strategy (see `RedisLockStrategyOptions.replicaAck`). */
export interface RedisReplicaAckOptions {
  /** Replicas that must have a lock's write before the lock counts (Redis `WAIT numreplicas`). At least 1. */
  readonly replicas: number;
  /**
   * How long the master waits for them (`WAIT`'s timeout), in ms. Keep it well below the lock service's
   * `operationTimeout` (5 000 by default). Default 500.
   */
  readonly timeoutMs?: number;
}

/** The default of `RedisReplicaAckOptions.timeoutMs`, in ms. */
export const DEFAULT_REPLICA_ACK_TIMEOUT_MS = 500;

/** A script's reply, and how many replicas had acknowledged every write up to it when `WAIT` answered. */
export interface AcknowledgedReply<Reply> {
  readonly reply: Reply;
  readonly acknowledged: number;
}

/** What `ReplicaAck.confirm` needs to know of one step: what it grants, and how to give that back. */
export interface ConfirmedStep<Reply> {
  /** The lock or semaphore key, for the error. */
  readonly key: string;
  /** An acquisition (a hand-over included) or an extension. */
  readonly operation: 'acquire' | 'extend';
  /** Whether the script's reply says it granted (or extended): only such a write has to be confirmed. */
  readonly wrote: (reply: Reply) => boolean;
  /** Gives back a grant too few replicas confirmed (an extension has nothing to give back: omit it). */
  readonly giveBack?: () => Promise<unknown>;
  /**
   * Gives back whatever the script took when `WAIT` failed (see `ReplicaAck.run`). Default: what
   * `giveBack` gives back, when the script wrote.
   */
  readonly onWaitFailed?: (reply: Reply) => Promise<unknown>;
}

/**
 * Error replies to `WAIT` that say nothing of whether the server has `WAIT`: a master Sentinel demoted
 * ("WAIT cannot be used with replica instances", READONLY), a server loading its data, a Cluster in the
 * middle of a failover or a slot move. The call fails; the next one may well be served.
 */
const PASSING_REPLY = /^(READONLY|LOADING|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|MOVED|ASK|BUSY)\b|\breplica\b/i;

/**
 * True for a server's refusal of `WAIT`: an error reply (ioredis's ReplyError), such as "unknown command"
 * where it was renamed away or NOPERM where the ACL denies it, and not one of the passing replies above.
 * A connection that closed while `WAIT` was pending ("Command aborted due to connection close"), or a
 * command the client gave up on, is no answer of the server's.
 */
function isRefusal(error: Error): boolean {
  return error.name === 'ReplyError' && !PASSING_REPLY.test(error.message);
}

/**
 * Waits, after a script that wrote a lock, until enough replicas have the write: `WAIT` sent right behind
 * the script in one pipeline, so on the same connection (`WAIT` counts the writes of its own connection)
 * and in the same round trip. On a Cluster the pipeline goes to the node of the script's keys, the lock's
 * master. `WAIT` cannot run inside a script. A server that refuses it (an error reply, as managed services
 * that disable it give) is remembered: every later call that would go to that server fails at once,
 * without touching it. Any other failure of `WAIT` (the connection closed under it, a master just demoted)
 * fails that call alone.
 */
export class ReplicaAck {
  readonly replicas: number;
  readonly timeoutMs: number;
  /** The servers ("host:port") that refused `WAIT`, with their reply. */
  private readonly refusals = new Map<string, Error>();

  constructor(
    options: RedisReplicaAckOptions,
    private readonly strategy: string,
  ) {
    const raw: unknown = options;
    assertKnownKeys(raw, ['replicas', 'timeoutMs'], 'replicaAck');
    if (typeof options.replicas !== 'number' || !Number.isInteger(options.replicas) || options.replicas < 1 || options.replicas > 100) {
      throw new InvalidLockOptionsError('replicaAck.replicas', `expected a whole number of replicas from 1 to 100, got ${describe(options.replicas)}.`);
    }
    this.replicas = options.replicas;
    this.timeoutMs = assertDuration(options.timeoutMs ?? DEFAULT_REPLICA_ACK_TIMEOUT_MS, 'replicaAck.timeoutMs', 1);
    if (this.timeoutMs > 60_000) throw new InvalidLockOptionsError('replicaAck.timeoutMs', `must be at most 60000 ms (a lock operation waits for it), got ${this.timeoutMs}.`);
  }

  /**
   * Runs `script`, then `WAIT`, in one round trip. Rejects with the script's own error if it failed. When
   * `WAIT` failed, gives back what the script took first (`onWaitFailed`), then rejects: with
   * `LockNotReplicatedError` ('wait-unsupported') if the server refused `WAIT` (remembered for that
   * server), with `WAIT`'s error otherwise (whether the replicas have the write is unknown).
   */
  async run<Args extends ScriptArgs, Reply>(
    client: RedisLockClient,
    script: RedisScript<Args, Reply>,
    keys: readonly string[],
    args: Args,
    onWaitFailed: (reply: Reply) => Promise<unknown>,
    key: string,
    operation: 'acquire' | 'extend',
  ): Promise<AcknowledgedReply<Reply>> {
    const known = this.refusals.size === 0 ? undefined : this.refusals.get(keyServerOf(client, keys[0]));
    if (known) throw this.unsupported(key, operation, known);
    const { reply, waited, server } = await script.runThenWait(client, keys, args, this.replicas, this.timeoutMs);
    if (typeof waited === 'number') return { reply, acknowledged: waited };
    await onWaitFailed(reply).catch(() => undefined);
    if (!isRefusal(waited)) throw waited;
    this.refusals.set(server, waited);
    throw this.unsupported(key, operation, waited);
  }

  /**
   * `run`, then the rule every grant and extension follows (the lock's and the semaphore's alike): the reply
   * counts when the script wrote nothing (`step.wrote` false) or enough replicas acknowledged the write;
   * otherwise `step.giveBack` undoes the grant and the call fails with `LockNotReplicatedError`
   * ('too-few-replicas'). Resolves the script's reply.
   */
  async confirm<Args extends ScriptArgs, Reply>(client: RedisLockClient, script: RedisScript<Args, Reply>, keys: readonly string[], args: Args, step: ConfirmedStep<Reply>): Promise<Reply> {
    const onWaitFailed = step.onWaitFailed ?? ((reply: Reply) => (step.wrote(reply) && step.giveBack ? step.giveBack() : Promise.resolve()));
    const { reply, acknowledged } = await this.run(client, script, keys, args, onWaitFailed, step.key, step.operation);
    if (!step.wrote(reply) || this.enough(acknowledged)) return reply;
    await step.giveBack?.().catch(() => undefined);
    throw this.tooFew(step.key, step.operation, acknowledged);
  }

  /** True when the write was acknowledged by enough replicas. */
  enough(acknowledged: number): boolean {
    return acknowledged >= this.replicas;
  }

  /** The error for a write that too few replicas acknowledged. */
  tooFew(key: string, operation: 'acquire' | 'extend', acknowledged: number): LockNotReplicatedError {
    return new LockNotReplicatedError(key, this.strategy, operation, 'too-few-replicas', this.replicas, acknowledged, this.timeoutMs);
  }

  private unsupported(key: string, operation: 'acquire' | 'extend', refusal: Error): LockNotReplicatedError {
    return new LockNotReplicatedError(key, this.strategy, operation, 'wait-unsupported', this.replicas, undefined, this.timeoutMs, { cause: refusal });
  }
}
