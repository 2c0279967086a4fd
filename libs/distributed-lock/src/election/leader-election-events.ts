import { EventEmitter } from 'node:events';
import type { LeadershipLostError, LeadershipLostReason } from '../errors/leadership-lost.error';

/** Payloads by event name. Durations in ms. */
export interface LeaderElectionEventMap {
  /** This process leads, from now until `signal` aborts. */
  gained: [{ readonly election: string; readonly term: number | undefined; readonly signal: AbortSignal }];
  /** This process stopped leading; emitted after the term's signal aborted. */
  lost: [{ readonly election: string; readonly term: number | undefined; readonly reason: LeadershipLostReason; readonly error: LeadershipLostError; readonly heldMs: number }];
  /**
   * A campaign could not reach the backend (tried again in `retryInMs`), the release of a term's lock
   * failed at a resignation or once its lease passed on the local clock (0: the lease frees the lock by
   * itself), or a `gained` listener threw (0).
   */
  campaignError: [{ readonly election: string; readonly error: unknown; readonly retryInMs: number }];
}

/** Events of one leader election. */
export class LeaderElectionEvents extends EventEmitter<LeaderElectionEventMap> {}

/** What `@OnLeadershipGained` methods and `gained` listeners receive. */
export type LeadershipGainedEvent = LeaderElectionEventMap['gained'][0];
/** What `@OnLeadershipLost` methods and `lost` listeners receive. */
export type LeadershipLostEvent = LeaderElectionEventMap['lost'][0];
