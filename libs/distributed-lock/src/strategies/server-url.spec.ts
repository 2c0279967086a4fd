import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { EtcdLockStrategy } from './etcd/etcd-lock.strategy';
import { RedisLockStrategy } from './redis/redis-lock.strategy';
import { RedlockStrategy } from './redis/redlock.strategy';

// An address copied without its scheme is refused before any client is made, with the URL to write.
describe('server addresses without a scheme', () => {
  it('RedisLockStrategy refuses "localhost:36379" and names "redis://localhost:36379"', () => {
    expect(() => new RedisLockStrategy({ connection: 'localhost:36379' })).toThrow(InvalidLockOptionsError);
    expect(() => new RedisLockStrategy({ connection: 'localhost:36379' })).toThrow(
      /RedisLockStrategy options\.connection.*"localhost:36379", which has no scheme\. Write "redis:\/\/localhost:36379" \(or "rediss:\/\/localhost:36379"/,
    );
  });

  it('RedlockStrategy refuses one in its connections, naming which', () => {
    // The bad one first: the masters before it would have got a client already.
    expect(() => new RedlockStrategy({ connections: ['127.0.0.1:2', 'redis://127.0.0.1:1', 'redis://127.0.0.1:3'] })).toThrow(
      /connections\[0\]\.connection.*Write "redis:\/\/127\.0\.0\.1:2"/,
    );
  });

  it('EtcdLockStrategy refuses a host without http:// or https://', () => {
    expect(() => new EtcdLockStrategy({ connection: { hosts: 'localhost:2379' } })).toThrow(/connection\.hosts.*Write "http:\/\/localhost:2379"/);
    expect(() => new EtcdLockStrategy({ connection: { hosts: ['http://127.0.0.1:1', 'etcd-2:2379'] } })).toThrow(/connection\.hosts\[1\].*"http:\/\/etcd-2:2379"/);
  });

  it('URLs and Unix socket paths are taken', async () => {
    const strategies = [
      new RedisLockStrategy({ connection: 'redis://127.0.0.1:1', name: 'url' }),
      new RedisLockStrategy({ connection: 'rediss://127.0.0.1:1', name: 'tls' }),
      new RedisLockStrategy({ connection: '/tmp/no-such-redis.sock', name: 'socket' }),
      new EtcdLockStrategy({ connection: { hosts: ['http://127.0.0.1:1', 'http://127.0.0.1:2'] } }),
    ];
    await Promise.all(strategies.map((strategy) => strategy.close()));
  });
});
