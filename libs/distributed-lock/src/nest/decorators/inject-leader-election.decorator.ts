import { Inject } from '@nestjs/common';
import { getLeaderElectionToken } from '../distributed-lock.tokens';

/**
 * Injects the `LeaderElection` registered under `name` with `DistributedLockModule.forFeature({ elections })`.
 */
export function InjectLeaderElection(name: string): PropertyDecorator & ParameterDecorator {
  return Inject(getLeaderElectionToken(name));
}
