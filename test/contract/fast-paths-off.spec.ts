import { describeLockStrategyContract } from './lock-strategy.contract';
import { describeSemaphoreContract } from './semaphore.contract';
import { fastPathsOffSubjects } from './subjects';

// The strategies whose fast paths reach into their client's internals, with those paths turned off
// (`fastPaths: false`): the fallback through the client's public API keeps the whole contract, locks and
// semaphores, so a user who turns them off (say, for a client version they no longer fit) loses speed,
// never a guarantee.
for (const subject of fastPathsOffSubjects) {
  describeLockStrategyContract(subject);
  if (subject.capabilities.semaphores) describeSemaphoreContract(subject);
}
