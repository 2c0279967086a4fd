import type { LockStrategy, LockStrategyCapabilities } from '@app/distributed-lock';
import type { TopologyName } from '../../scripts/services';

/** One strategy as the contract suite sees it. Adding a backend means adding one subject to `subjects.ts`. */
export interface ContractSubject {
  /** Suite title, e.g. "redis (single instance)". */
  readonly name: string;
  /** What the strategy declares; decides which optional sections run (FIFO, fencing, shared, cross-process). */
  readonly capabilities: LockStrategyCapabilities;
  /** A fresh strategy with its own connections. */
  create(): Promise<LockStrategy>;
  /** Delete a key's lock behind its holder's back, as an operator or a failover would. */
  removeBehindBack(strategy: LockStrategy, key: string): Promise<void>;
  /**
   * The backend tells the holder at once when its lock is removed (a watch, a session, a connection):
   * `removeBehindBack` then aborts the holder's signal while the section runs, not at the next extension.
   */
  readonly pushesRemoval?: boolean;
  /** A server set-up the global setup does not start (ensembles, clusters): started for this suite only. */
  readonly topology?: TopologyName;
}
