import { applyDecorators, SetMetadata } from '@nestjs/common';
import { LEADERSHIP_GAINED_METADATA, LEADERSHIP_LOST_METADATA } from '../distributed-lock.constants';

/** What `@OnLeadershipGained` / `@OnLeadershipLost` record; read by the explorer. */
export interface LeadershipHookMetadata {
  /** The election's name; undefined: every election of the application. */
  readonly election: string | undefined;
}

/**
 * Calls the decorated provider method each time this process becomes the leader of `election` (every
 * registered election when no name is given), with `{ election, term, signal }`: `signal` aborts when
 * this term ends, so work started here can stop with it. Errors thrown by the method are logged.
 *
 * @example
 * ＠OnLeadershipGained('billing')
 * startBilling({ term, signal }: LeadershipGainedEvent) { ... }
 */
export function OnLeadershipGained(election?: string): MethodDecorator {
  const metadata: LeadershipHookMetadata = { election };
  return applyDecorators(SetMetadata(LEADERSHIP_GAINED_METADATA, metadata));
}

/**
 * Calls the decorated provider method each time this process stops leading `election` (every registered
 * election when no name is given), with `{ election, term, reason, error }`, after the term's signal
 * aborted. Errors thrown by the method are logged.
 */
export function OnLeadershipLost(election?: string): MethodDecorator {
  const metadata: LeadershipHookMetadata = { election };
  return applyDecorators(SetMetadata(LEADERSHIP_LOST_METADATA, metadata));
}
