import { describeLockStrategyContract } from './lock-strategy.contract';
import { optionVariantSubjects } from './subjects';

// Other settings of strategies the main list holds with their defaults (the advisory strategy's
// transaction scope): the same contract, against the same server, across processes.
for (const subject of optionVariantSubjects) describeLockStrategyContract(subject);
