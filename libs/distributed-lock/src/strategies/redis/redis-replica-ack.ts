import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { LockNotReplicatedError } from '../../errors/lock-not-replicated.error';
import { assertDuration, assertKnownKeys, describe } from '../../locking/lock-options';
import type { RedisLockClient } from './redis-client.type';
import type { RedisScript } from './redis-script';

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
export interface AcknowledgedReply {
  readonly reply: unknown;
  readonly acknowledged: number;
}

/** What `ReplicaAck.confirm` needs to know of one step: what it grants, and how to give that back. */
export interface ConfirmedStep {
  /** The lock or semaphore key, for the error. */
  readonly key: string;
  /** An acquisition (a hand-over included) or an extension. */
  readonly operation: 'acquire' | 'extend';
  /** Whether the script's reply says it granted (or extended): only such a write has to be confirmed. */
  readonly wrote: (reply: unknown) => boolean;
  /** Gives back a grant too few replicas confirmed (an extension has nothing to give back: omit it). */
  readonly giveBack?: () => Promise<unknown>;
  /**
   * Gives back whatever the script took when the server refused `WAIT` (see `ReplicaAck.run`). Default: what
   * `giveBack` gives back, when the script wrote.
   */
  readonly onRefused?: (reply: unknown) => Promise<unknown>;
}

/**
 * Waits, after a script that wrote a lock, until enough replicas have the write: `WAIT` sent right behind
 * the script in one pipeline, so on the same connection (`WAIT` counts the writes of its own connection)
 * and in the same round trip. On a Cluster the pipeline goes to the node of the script's keys, the lock's
 * master. `WAIT` cannot run inside a script. A server that refuses it (an error reply, as managed services
 * that disable it give) is remembered: every later call fails at once, without touching the server.
 */
export class ReplicaAck {
  readonly replicas: number;
  readonly timeoutMs: number;
  private refusal: Error | undefined;

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

  /** Throws the typed error at once when the server already refused `WAIT`. */
  assertSupported(key: string, operation: 'acquire' | 'extend'): void {
    if (this.refusal) throw this.unsupported(key, operation);
  }

  /**
   * Runs `script`, then `WAIT`, in one round trip. Rejects with the script's own error if it failed, and
   * with `LockNotReplicatedError` ('wait-unsupported') if the server refused `WAIT` (the script ran: the
   * caller gives back what it took first, see `onRefused`).
   */
  async run(
    client: RedisLockClient,
    script: RedisScript,
    keys: readonly string[],
    args: ReadonlyArray<string | number>,
    onRefused: (reply: unknown) => Promise<unknown>,
    key: string,
    operation: 'acquire' | 'extend',
  ): Promise<AcknowledgedReply> {
    this.assertSupported(key, operation);
    const [reply, waited] = await script.runThenWait(client, keys, args, this.replicas, this.timeoutMs);
    if (waited instanceof Error) {
      this.refusal = waited;
      const error = this.unsupported(key, operation);
      await onRefused(reply).catch(() => undefined);
      throw error;
    }
    return { reply, acknowledged: waited };
  }

  /**
   * `run`, then the rule every grant and extension follows (the lock's and the semaphore's alike): the reply
   * counts when the script wrote nothing (`step.wrote` false) or enough replicas acknowledged the write;
   * otherwise `step.giveBack` undoes the grant and the call fails with `LockNotReplicatedError`
   * ('too-few-replicas'). Resolves the script's reply.
   */
  async confirm(client: RedisLockClient, script: RedisScript, keys: readonly string[], args: ReadonlyArray<string | number>, step: ConfirmedStep): Promise<unknown> {
    const onRefused = step.onRefused ?? ((reply: unknown) => (step.wrote(reply) && step.giveBack ? step.giveBack() : Promise.resolve()));
    const { reply, acknowledged } = await this.run(client, script, keys, args, onRefused, step.key, step.operation);
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

  private unsupported(key: string, operation: 'acquire' | 'extend'): LockNotReplicatedError {
    return new LockNotReplicatedError(key, this.strategy, operation, 'wait-unsupported', this.replicas, undefined, this.timeoutMs, { cause: this.refusal });
  }
}
