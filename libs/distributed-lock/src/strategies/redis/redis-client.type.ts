import type { Cluster, Redis } from 'ioredis';

/** The commands the Redis strategies send; any ioredis `Redis` or `Cluster` (also Sentinel-backed) fits. */
export type RedisLockClient = Pick<Redis, 'evalsha' | 'eval' | 'pipeline' | 'ping' | 'quit' | 'disconnect' | 'status' | 'on' | 'off'> & {
  duplicate(): RedisSubscriberClient;
};

/** What the dedicated subscriber connection needs. */
export type RedisSubscriberClient = Pick<Redis, 'subscribe' | 'unsubscribe' | 'on' | 'off' | 'quit' | 'disconnect' | 'status'>;

/** A user's client, or ours: `Redis` or `Cluster` from ioredis. */
export type IoRedisClient = Redis | Cluster;
