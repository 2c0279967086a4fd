import { describePermitQueryContract } from './permit-query.contract';
import { describePrefixQueryContract } from './prefix-query.contract';
import { describeQueryContract } from './query.contract';
import { subjects } from './subjects';

// `LockService.query` on every subject, and `queryPermits` on every subject with semaphores: the ones that
// answer against their real server, the others refuse.
for (const subject of subjects) {
  describeQueryContract(subject);
  describePrefixQueryContract(subject);
  if (subject.capabilities.semaphores) describePermitQueryContract(subject);
}
