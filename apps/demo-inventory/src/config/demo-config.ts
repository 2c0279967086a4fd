import { registerAs } from '@nestjs/config';

/** Where the demo keeps its data: an embedded SQLite file, MariaDB/MySQL, or PostgreSQL. */
export type DemoDatabase = 'sqlite' | 'mysql' | 'postgres';

/** The databases whose rows a transaction can lock (the pessimistic checkout) and that have their own lock queue (advisory locks). */
export const SERVER_DATABASES: readonly DemoDatabase[] = ['mysql', 'postgres'];

/** Lock strategies the demo can guard its stock with. */
export const DEMO_LOCK_STRATEGIES = ['row', 'advisory', 'redis', 'redis-barging', 'redlock', 'zookeeper', 'etcd', 'memory'] as const;
export type DemoLockStrategy = (typeof DEMO_LOCK_STRATEGIES)[number];

/** The demo's configuration, from the environment (what `run-demo` sets for each instance). */
export interface DemoConfig {
  readonly port: number;
  readonly instance: string;
  readonly database: DemoDatabase;
  readonly sqlitePath: string;
  readonly mysqlUrl: string | undefined;
  readonly postgresUrl: string | undefined;
  /** Strategy of the inventory module (its `@Locked` stock deduction). */
  readonly inventoryLock: DemoLockStrategy;
  /** `redis://host:port`, or `redis+sentinel://host:port[,host:port]/masterName` for a master behind Sentinel. */
  readonly redisUrl: string | undefined;
  /** Replicas the Redis strategy waits for after each write (`DEMO_REDIS_REPLICA_ACK`, e.g. "1" or "1:500" with the timeout in ms); 0: none. */
  readonly redisReplicaAck: { readonly replicas: number; readonly timeoutMs?: number } | undefined;
  readonly redisUrls: string[];
  readonly zookeeper: string | undefined;
  readonly etcdHosts: string[];
}

export const demoConfig = registerAs('demo', (): DemoConfig => {
  const inventoryLock = (process.env.INVENTORY_LOCK ?? 'row') as DemoLockStrategy;
  if (!DEMO_LOCK_STRATEGIES.includes(inventoryLock)) {
    throw new Error(`INVENTORY_LOCK must be one of ${DEMO_LOCK_STRATEGIES.join(', ')}; got "${inventoryLock}"`);
  }
  return {
    port: Number(process.env.PORT ?? 3000),
    instance: process.env.INSTANCE_NAME ?? `instance-${process.pid}`,
    database: process.env.DEMO_DATABASE === 'mysql' || process.env.DEMO_DATABASE === 'postgres' ? process.env.DEMO_DATABASE : 'sqlite',
    sqlitePath: process.env.DEMO_SQLITE_PATH ?? 'demo-inventory.sqlite',
    mysqlUrl: process.env.LOCK_TEST_MYSQL_URL,
    postgresUrl: process.env.LOCK_TEST_POSTGRES_URL,
    inventoryLock,
    redisUrl: process.env.LOCK_TEST_REDIS_URL,
    redisReplicaAck: replicaAckFrom(process.env.DEMO_REDIS_REPLICA_ACK),
    redisUrls: (process.env.LOCK_TEST_REDIS_URLS ?? '').split(',').filter(Boolean),
    zookeeper: process.env.LOCK_TEST_ZOOKEEPER,
    etcdHosts: (process.env.LOCK_TEST_ETCD ?? '').split(',').filter(Boolean),
  };
});

/** "1" or "1:500" → { replicas: 1, timeoutMs: 500 }; unset or "0" → undefined. */
export function replicaAckFrom(value: string | undefined): DemoConfig['redisReplicaAck'] {
  if (!value || value === '0') return undefined;
  const [replicas, timeoutMs] = value.split(':').map(Number);
  return timeoutMs === undefined ? { replicas } : { replicas, timeoutMs };
}
