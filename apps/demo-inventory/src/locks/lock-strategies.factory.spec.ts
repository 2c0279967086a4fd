import { replicaAckFrom } from '../config/demo-config';
import { redisConnection } from './lock-strategies.factory';

describe('demo Redis settings', () => {
  it('reads a redis+sentinel:// URL as ioredis Sentinel options, and leaves a plain URL as it is', () => {
    expect(redisConnection('redis+sentinel://127.0.0.1:16610,10.0.0.2:26379/lock-test2')).toEqual({
      sentinels: [
        { host: '127.0.0.1', port: 16610 },
        { host: '10.0.0.2', port: 26379 },
      ],
      name: 'lock-test2',
    });
    expect(redisConnection('redis://127.0.0.1:16379')).toBe('redis://127.0.0.1:16379');
  });

  it('reads DEMO_REDIS_REPLICA_ACK as replicas and an optional timeout', () => {
    expect(replicaAckFrom(undefined)).toBeUndefined();
    expect(replicaAckFrom('0')).toBeUndefined();
    expect(replicaAckFrom('1')).toEqual({ replicas: 1 });
    expect(replicaAckFrom('2:500')).toEqual({ replicas: 2, timeoutMs: 500 });
  });
});
