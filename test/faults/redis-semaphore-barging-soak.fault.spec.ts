import { describeRedisSemaphoreSoak } from '../support/redis-semaphore-soak';

// Bounded barging (`fair: false`): free places go to whoever asks first within the head's window.
describeRedisSemaphoreSoak('redis (barging)');
