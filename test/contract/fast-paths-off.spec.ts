import { describeLockStrategyContract } from './lock-strategy.contract';
import { describePermitQueryContract } from './permit-query.contract';
import { describeQueryContract } from './query.contract';
import { describeSemaphoreContract } from './semaphore.contract';
import { fastPathsOffSubjects } from './subjects';

// The strategies whose fast paths reach into their client's internals, with those paths turned off
// (`fastPaths: false`): the fallback through the client's public API keeps the whole contract, locks and
// semaphores and the operator's query, so a user who turns them off (say, for a client version they no longer fit) loses speed,
// never a guarantee.
for (const subject of fastPathsOffSubjects) {
  describeLockStrategyContract(subject);
  if (subject.capabilities.semaphores) describeSemaphoreContract(subject);
  if (subject.answersQuery) describeQueryContract(subject);
  if (subject.answersPermitQuery) describePermitQueryContract(subject);
}
