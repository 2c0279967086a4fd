import { describeLockStrategyContract } from '../contract/lock-strategy.contract';
import { describePromisesContract } from '../contract/promises.contract';
import { distantSubjects } from '../contract/subjects';

// The contract and the promises with the servers 20 ms of round trip away (a latency proxy in front of
// each): leases, the watchdog, operation timeouts and Redlock's drift allowance across zones.
for (const subject of distantSubjects) {
  describeLockStrategyContract(subject);
  describePromisesContract(subject);
}
