import type { RedisOptions } from 'ioredis';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { handOverLimits, type HandOverLimits, type LocalHandOverOption } from '../../locking/hand-over-limits';
import { assertDuration, assertKnownKeys, describe } from '../../locking/lock-options';
import { strategyName } from '../strategy-name';
import type { IoRedisClient } from './redis-client.type';

/** Options of the Redlock strategy. */
export interface RedlockStrategyOptions {
  /** Independent masters (not replicas of each other, not one Cluster): at least 3, an odd number is best. */
  readonly clients?: readonly IoRedisClient[];
  /** Or their URLs / options: the strategy creates and closes the clients. */
  readonly connections?: ReadonlyArray<string | RedisOptions>;
  /** Name in messages and events. Default "redlock". */
  readonly name?: string;
  /** Prefix of every Redis key. Default "dlock:redlock:". */
  readonly namespace?: string;
  /** How long one node may take to answer, in ms; far below the lease. Default 100. */
  readonly nodeTimeout?: number;
  /** Bound of a wait for a release notification before trying again, in ms. Default 500. */
  readonly recheckInterval?: number;
  /**
   * Local hand-over: a release hands the lock straight to the next contender of this process for the
   * same key (no round trip to the masters), at most `passes` times and within `windowMs` of the
   * masters' grant, so other processes still get their turn. `false` turns it off. Default
   * `{ passes: 64, windowMs: 50 }`: fewer passes share the key more evenly between processes, at the
   * cost of a round trip to every master each time the lock goes back.
   */
  readonly localHandover?: LocalHandOverOption;
}

const OPTION_KEYS: readonly string[] = ['clients', 'connections', 'name', 'namespace', 'nodeTimeout', 'recheckInterval', 'localHandover'];

/** Redlock's options once checked, with their defaults. */
export interface ValidRedlockOptions {
  readonly name: string;
  /** Each master: a client of the app's, or the connection to open. */
  readonly masters: ReadonlyArray<{ readonly client: IoRedisClient; readonly connection?: undefined } | { readonly client?: undefined; readonly connection: string | RedisOptions }>;
  readonly namespace: string;
  readonly nodeTimeoutMs: number;
  readonly recheckMs: number;
  readonly handOver: HandOverLimits;
}

/** Checks Redlock's options before anything connects: a wrong one throws `InvalidLockOptionsError` naming it. */
export function validRedlockOptions(options: RedlockStrategyOptions): ValidRedlockOptions {
  const raw: unknown = options;
  assertKnownKeys(raw, OPTION_KEYS, 'RedlockStrategy options');
  const name = strategyName(options.name, 'redlock');
  if (options.clients !== undefined && options.connections !== undefined) {
    throw new InvalidLockOptionsError('RedlockStrategy options', 'give either `clients` or `connections`, not both.');
  }
  const list: readonly unknown[] = options.clients ?? options.connections ?? [];
  if (!Array.isArray(list) || list.length < 3) {
    throw new InvalidLockOptionsError(options.clients ? 'clients' : 'connections', `Redlock needs at least 3 independent masters, got ${Array.isArray(list) ? list.length : describe(list)}.`);
  }
  return {
    name,
    masters: list.map((entry) => (options.clients ? { client: entry as IoRedisClient } : { connection: entry as string | RedisOptions })),
    namespace: options.namespace ?? 'dlock:redlock:',
    nodeTimeoutMs: assertDuration(options.nodeTimeout ?? 100, 'nodeTimeout', 1),
    recheckMs: assertDuration(options.recheckInterval ?? 500, 'recheckInterval', 10),
    handOver: handOverLimits(options.localHandover),
  };
}

/** Throws `InvalidLockOptionsError` for a lease too short for the node timeout: a majority's answers would eat it. */
export function assertNodeTimeoutFits(nodeTimeoutMs: number, ttlMs: number): void {
  if (nodeTimeoutMs * 2 >= ttlMs) {
    throw new InvalidLockOptionsError('ttl', `Redlock needs a lease far above the node timeout (${nodeTimeoutMs} ms); use a ttl of at least ${nodeTimeoutMs * 2 + 1} ms.`);
  }
}
