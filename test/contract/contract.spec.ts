import { describeLockStrategyContract } from './lock-strategy.contract';
import { subjects } from './subjects';

// One suite, every strategy: a strategy is done when it passes all of it against its real server.
for (const subject of subjects) describeLockStrategyContract(subject);
