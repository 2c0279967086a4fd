import { describeLockStrategyContract } from './lock-strategy.contract';
import { describeQueryContract } from './query.contract';
import { optionVariantSubjects } from './subjects';

// Other settings of strategies the main list holds with their defaults (the advisory strategy's
// transaction scope, the pessimistic strategy's holder marks on MariaDB): the same contract, against the
// same server, across processes, and the operator's query where the setting makes the strategy answer it.
for (const subject of optionVariantSubjects) {
  describeLockStrategyContract(subject);
  if (subject.answersQuery) describeQueryContract(subject);
}
