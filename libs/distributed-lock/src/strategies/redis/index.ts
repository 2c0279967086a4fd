export { RedisLockStrategy, type RedisLockStrategyOptions } from './redis-lock.strategy';
export { RedlockStrategy } from './redlock.strategy';
export type { RedlockStrategyOptions } from './redlock-options';
export type { IoRedisClient } from './redis-client.type';
export { DEFAULT_REPLICA_ACK_TIMEOUT_MS, type RedisReplicaAckOptions } from './redis-replica-ack';
