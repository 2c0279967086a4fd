import { Redis, type RedisOptions } from 'ioredis';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { resolveRedisClient } from './redis-connection';

const sentinelOptions = { sentinels: [{ host: '127.0.0.1', port: 1 }], name: 'mymaster', lazyConnect: true };

describe('resolveRedisClient with Sentinel', () => {
  it('refuses a Sentinel client of the user\'s without failoverDetector, saying what to set', () => {
    const client = new Redis(sentinelOptions);
    try {
      expect(() => resolveRedisClient(client, undefined, 'redis', 'options')).toThrow(InvalidLockOptionsError);
      expect(() => resolveRedisClient(client, undefined, 'redis', 'options')).toThrow(/failoverDetector: true/);
    } finally {
      client.disconnect();
    }
    const detecting = new Redis({ ...sentinelOptions, failoverDetector: true });
    try {
      expect(resolveRedisClient(detecting, undefined, 'redis', 'options')).toEqual({ client: detecting, owned: false });
    } finally {
      detecting.disconnect();
    }
  });

  it('makes its own Sentinel client leave a replaced master at once: failoverDetector, a quick close and reconnect, READONLY reconnects', () => {
    const { client } = resolveRedisClient(undefined, sentinelOptions, 'redis', 'options');
    try {
      const options = (client as unknown as { options: RedisOptions }).options;
      expect(options.failoverDetector).toBe(true);
      expect(options.disconnectTimeout).toBeLessThanOrEqual(100);
      expect(options.retryStrategy?.(20)).toBeLessThanOrEqual(500);
      expect(options.reconnectOnError?.(new Error('READONLY You can\'t write against a read only replica.'))).toBe(true);
      expect(options.reconnectOnError?.(new Error('ERR unknown command'))).toBe(false);
    } finally {
      client.disconnect();
    }
    // A user's explicit choice stands.
    const { client: own } = resolveRedisClient(undefined, { ...sentinelOptions, disconnectTimeout: 2_000 }, 'redis', 'options');
    try {
      expect((own as unknown as { options: RedisOptions }).options.disconnectTimeout).toBe(2_000);
    } finally {
      own.disconnect();
    }
  });
});

describe('resolveRedisClient from a URL or plain options', () => {
  it('makes clients that reconnect at most 500 ms apart (ioredis 6 backs off up to 5 s), unless the user says otherwise', () => {
    const fromUrl = resolveRedisClient(undefined, 'redis://127.0.0.1:1', 'redis', 'options').client;
    const fromOptions = resolveRedisClient(undefined, { host: '127.0.0.1', port: 1, lazyConnect: true }, 'redis', 'options').client;
    const chosen = resolveRedisClient(undefined, { host: '127.0.0.1', port: 1, lazyConnect: true, retryStrategy: () => 3_000 }, 'redis', 'options').client;
    // An option left unset (`retryStrategy: config.retry` with none configured) keeps the default.
    const unset = resolveRedisClient(undefined, { host: '127.0.0.1', port: 1, lazyConnect: true, retryStrategy: undefined }, 'redis', 'options').client;
    try {
      for (const client of [fromUrl, fromOptions, unset]) {
        const { retryStrategy } = (client as unknown as { options: RedisOptions }).options;
        expect([1, 5, 20, 100].map((attempt) => retryStrategy?.(attempt) ?? Infinity).every((delay) => delay <= 500)).toBe(true);
      }
      expect((chosen as unknown as { options: RedisOptions }).options.retryStrategy?.(1)).toBe(3_000);
    } finally {
      for (const client of [fromUrl, fromOptions, chosen, unset]) client.disconnect();
    }
  });
});
