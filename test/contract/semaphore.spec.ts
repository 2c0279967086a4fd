import { describeNoSemaphores, describeSemaphoreContract } from './semaphore.contract';
import { subjects } from './subjects';

// The semaphore part of the contract: every subject that declares semaphores passes it against its real
// server; the others must refuse permits cleanly. Clusters (a topology of their own) run the same code as
// their single-node subject and are left to the lock contract.
for (const subject of subjects) {
  if (subject.topology) continue;
  if (subject.capabilities.semaphores) describeSemaphoreContract(subject);
  else describeNoSemaphores(subject);
}
