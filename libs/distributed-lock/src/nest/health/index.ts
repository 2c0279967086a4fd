export { DistributedLockHealthIndicator } from './distributed-lock.health';
