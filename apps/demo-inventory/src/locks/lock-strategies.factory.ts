import { InMemoryLockStrategy, type LockStrategy } from '@app/distributed-lock';
import { AdvisoryLockStrategy, PessimisticLockStrategy, RowLockStrategy } from '@app/distributed-lock/strategies/database';
import { EtcdLockStrategy } from '@app/distributed-lock/strategies/etcd';
import { RedisLockStrategy, RedlockStrategy } from '@app/distributed-lock/strategies/redis';
import { ZooKeeperLockStrategy } from '@app/distributed-lock/strategies/zookeeper';
import type { RedisOptions } from 'ioredis';
import type { DataSource } from 'typeorm';
import { SERVER_DATABASES, type DemoConfig } from '../config/demo-config';

function required(value: string | undefined, name: string): string {
  if (!value) throw new Error(`${name} must be set for this lock strategy (run-demo sets it from the services it starts)`);
  return value;
}

/**
 * A Redis URL as ioredis takes it, or, for `redis+sentinel://host:port[,host:port]/masterName`, ioredis's
 * Sentinel options: the client asks the Sentinels for the master, and again after a failover.
 */
export function redisConnection(url: string): string | RedisOptions {
  const sentinel = /^redis\+sentinel:\/\/([^/]+)\/(.+)$/.exec(url);
  if (!sentinel) return url;
  const sentinels = sentinel[1].split(',').map((address) => {
    const at = address.lastIndexOf(':');
    return { host: address.slice(0, at), port: Number(address.slice(at + 1)) };
  });
  return { sentinels, name: sentinel[2] };
}

/** The inventory strategy named by the configuration. Built on the app's own DataSource where it is a database one. */
function inventoryStrategy(config: DemoConfig, dataSource: DataSource): LockStrategy {
  switch (config.inventoryLock) {
    case 'row':
      return new RowLockStrategy({ dataSource, name: 'row' });
    case 'advisory':
      // The database's own lock queue (pg_advisory_lock, GET_LOCK): one pinned connection per held lock.
      return new AdvisoryLockStrategy({ dataSource, name: 'advisory', maxHeldConnections: 12 });
    case 'redis':
      return new RedisLockStrategy({ connection: redisConnection(required(config.redisUrl, 'LOCK_TEST_REDIS_URL')), name: 'redis', replicaAck: config.redisReplicaAck });
    case 'redis-barging':
      return new RedisLockStrategy({ connection: redisConnection(required(config.redisUrl, 'LOCK_TEST_REDIS_URL')), name: 'redis-barging', fair: false, replicaAck: config.redisReplicaAck });
    case 'redlock':
      if (config.redisUrls.length < 3) throw new Error('LOCK_TEST_REDIS_URLS must list at least 3 masters for redlock');
      return new RedlockStrategy({ connections: config.redisUrls });
    case 'zookeeper':
      return new ZooKeeperLockStrategy({ connect: required(config.zookeeper, 'LOCK_TEST_ZOOKEEPER') });
    case 'etcd':
      if (config.etcdHosts.length === 0) throw new Error('LOCK_TEST_ETCD must list the etcd endpoints');
      return new EtcdLockStrategy({ connection: { hosts: config.etcdHosts } });
    case 'memory':
      return new InMemoryLockStrategy({ name: 'memory' });
  }
}

/**
 * Every strategy the app registers: the inventory's, the payment step's semaphore (the lock table, on the
 * database of the sale, whatever guards the stock), the reports'
 * (in-process), and the pessimistic one on MySQL and PostgreSQL.
 */
export function buildLockStrategies(config: DemoConfig, dataSource: DataSource): Record<string, LockStrategy> {
  return {
    inventory: inventoryStrategy(config, dataSource),
    payments: new RowLockStrategy({ dataSource, name: 'payments' }),
    reports: new InMemoryLockStrategy({ name: 'reports-memory' }),
    ...(SERVER_DATABASES.includes(config.database) ? { pessimistic: new PessimisticLockStrategy({ dataSource, maxHeldConnections: 12 }) } : {}),
  };
}
