import { describeNoSemaphores, describeSemaphoreContract } from './semaphore.contract';
import { subjects } from './subjects';

// The semaphore part of the contract: every subject that declares semaphores passes it against its real
// server, clusters included (a Redis Cluster's slots, an ensemble's or a cluster's followers answering); the
// others must refuse permits cleanly.
for (const subject of subjects) {
  if (subject.capabilities.semaphores) describeSemaphoreContract(subject);
  else describeNoSemaphores(subject);
}
