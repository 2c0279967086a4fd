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
  readonly redisUrl: string | undefined;
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
    redisUrls: (process.env.LOCK_TEST_REDIS_URLS ?? '').split(',').filter(Boolean),
    zookeeper: process.env.LOCK_TEST_ZOOKEEPER,
    etcdHosts: (process.env.LOCK_TEST_ETCD ?? '').split(',').filter(Boolean),
  };
});
