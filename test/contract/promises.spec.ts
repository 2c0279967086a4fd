import { describePromisesContract } from './promises.contract';
import { subjects } from './subjects';

// The README's promises, attacked through the public API: every strategy, against its real server.
for (const subject of subjects) describePromisesContract(subject);
