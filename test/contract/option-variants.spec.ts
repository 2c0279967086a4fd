import { describeLockStrategyContract } from './lock-strategy.contract';
import { describePromisesContract } from './promises.contract';
import { describeQueryContract } from './query.contract';
import { optionVariantSubjects } from './subjects';

// Other settings of strategies the main list holds with their defaults (the advisory strategy's
// transaction scope, the pessimistic strategy's holder marks on MariaDB, ZooKeeper's cohorts): the same
// contract, against the same server, across processes, the operator's query where the setting makes the
// strategy answer it, and the promises where it changes how a lock is handed over.
for (const subject of optionVariantSubjects) {
  describeLockStrategyContract(subject);
  if (subject.answersQuery) describeQueryContract(subject);
  if (subject.promises) describePromisesContract(subject);
}
