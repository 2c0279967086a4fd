import { describeRedisSemaphoreSoak } from '../support/redis-semaphore-soak';

// FIFO (`fair: true`).
describeRedisSemaphoreSoak('redis (fair)');
