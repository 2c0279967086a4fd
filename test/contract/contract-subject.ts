import type { LockStrategy, LockStrategyCapabilities } from '@app/distributed-lock/strategy-kit';
import { startTopology, stopTopology, type TopologyName } from '../../scripts/services';

/** One strategy as the contract suite sees it. Adding a backend means adding one subject to `subjects.ts`. */
export interface ContractSubject {
  /** Suite title, e.g. "redis (single instance)". */
  readonly name: string;
  /** What the strategy declares; decides which optional sections run (FIFO, fencing, shared, cross-process). */
  readonly capabilities: LockStrategyCapabilities;
  /** A fresh strategy with its own connections. */
  create(): Promise<LockStrategy>;
  /**
   * For an option variant (`optionVariantSubjects`): the setting changes how locks are handed over, so the
   * promises suite runs on it as well as the contract and the query.
   */
  readonly promises?: boolean;
  /** Delete a key's lock behind its holder's back, as an operator or a failover would. */
  removeBehindBack(strategy: LockStrategy, key: string): Promise<void>;
  /**
   * The backend tells the holder at once when its lock is removed (a watch, a session, a connection):
   * `removeBehindBack` then aborts the holder's signal while the section runs, not at the next extension.
   */
  readonly pushesRemoval?: boolean;
  /**
   * For a subject that declares semaphores: delete every entry of semaphore `key` behind its holders' backs
   * (its keys, nodes or rows), as an operator or a bug would. `pushesRemoval` says for permits too whether
   * the holder is told at once or at its next extension.
   */
  removePermitsBehindBack?(key: string): Promise<void>;
  /**
   * The strategy polls and keeps a queue of waiters in the backend (`joinQueue`): a waiter of one instance
   * that came first is served before a later one of another instance, however often the later one tries.
   */
  readonly queuesWaiters?: boolean;
  /** The strategy answers `LockService.query` (`inspect`); the others must refuse it with a typed error. */
  readonly answersQuery?: boolean;
  /**
   * The backend keeps no grant time or lease end that `query` could read (memcached: an item's expiry cannot
   * be read back): `grantedAt` and `expiresAt` must then be null, never a guess. Default: it keeps both.
   */
  readonly queryWithoutTimes?: boolean;
  /**
   * The backend keeps a lease end but no grant time that `query` could read (Redlock: its plain masters store
   * the acquisition alone): `grantedAt` must then be null, `expiresAt` is checked as for the others.
   */
  readonly queryWithoutGrantTime?: boolean;
  /**
   * The backend keeps a grant time but no lease end (a database lock held by a connection lives as long as
   * it): `expiresAt` must then be null, `grantedAt` is checked as for the others.
   */
  readonly queryWithoutLeaseEnd?: boolean;
  /**
   * `query` may show a holder by what the server knows of it alone, with no owner id (MariaDB's `GET_LOCK`:
   * a connection caught inside its grant statement, before its fence row is written): host, pid and token
   * null. The history check does not look such a holder up among the holds.
   */
  readonly queryShowsUnnamedHolders?: boolean;
  /**
   * `breakLock` ends the holder's session on the server (a database's connection): the holder, told at once,
   * hears `session-ended`, the one thing its connection's end can say, instead of `broken`.
   */
  readonly breakEndsSession?: boolean;
  /**
   * The backend keeps no queue of waiters (memcached: contenders poll): `pending` must then be null while
   * another instance waits, never a guessed line.
   */
  readonly queryWithoutQueue?: boolean;
  /** It lists the keys under a prefix (`LockService.queryPrefix`, `strategy.listKeys`); the others must refuse it with a typed error. */
  readonly answersPrefixQuery?: boolean;
  /** Its semaphores answer `LockService.queryPermits` (`semaphore.inspect`); the others must refuse it with a typed error. */
  readonly answersPermitQuery?: boolean;
  /**
   * Its semaphores keep a queue of waiters though they are not FIFO (Redis with `fair: false`: a request may
   * overtake the head within its window): `queryPermits` lists the queue, and says `pending: []` when it is empty.
   */
  readonly permitsQueued?: boolean;
  /** A server set-up the global setup does not start (ensembles, clusters): started for this suite only. */
  readonly topology?: TopologyName;
  /**
   * Starts what the subject needs in this process besides its servers (latency proxies in front of them),
   * after the topology, and resolves what stops it. Child processes reach it through the environment.
   */
  prepare?(): Promise<() => Promise<void>>;
}

/**
 * Starts a subject's topology (unless its variable points at a running one) and its `prepare`; resolves
 * what undoes both, for a suite's `afterAll`.
 */
export async function setUpSubject(subject: ContractSubject): Promise<() => Promise<void>> {
  const topology = subject.topology ? await startTopology(subject.topology) : undefined;
  const undo = await subject.prepare?.();
  return async () => {
    await undo?.();
    if (topology?.managed) await stopTopology(topology.name);
  };
}
