import type { LockStrategy } from '@app/distributed-lock';
import { InMemoryLockStrategy } from '@app/distributed-lock/strategies/in-memory';
import { RedisLockStrategy, RedlockStrategy } from '@app/distributed-lock/strategies/redis';
import { Redis } from 'ioredis';
import { redisLockKeys, redisSemaphoreKeys } from '../../libs/distributed-lock/src/strategies/redis/redis-keys';
import { etcdSemaphorePrefix } from '@app/distributed-lock/strategies/etcd/etcd-keys';
import { zkLockPath, zkSemaphorePath } from '@app/distributed-lock/strategies/zookeeper/zookeeper-paths';
import { AdvisoryLockStrategy, getLockName, PessimisticLockStrategy, postgresAdvisoryKey, RowLockStrategy } from '@app/distributed-lock/strategies/database';
import { EtcdLockStrategy } from '@app/distributed-lock/strategies/etcd';
import type { Etcd3 } from 'etcd3';
import { ZooKeeperLockStrategy } from '@app/distributed-lock/strategies/zookeeper';
import { ZooKeeperSession } from '@app/distributed-lock/strategies/zookeeper/zookeeper-session';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DataSource, DataSourceOptions } from 'typeorm';
import type { ContractSubject } from './contract-subject';
import { atDistance } from './at-distance';
import { clusterClient, clusterStrategy } from '../support/redis-cluster-client';
import { memcachedSubject } from '../support/memcached-subject';

function requiredEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the tests through \`npm test\` (which starts the servers) or point it at your server`);
  return value;
}

/** Deletes keys on the given Redis servers with a throwaway client, as an operator would. */
async function deleteRedisKeys(urls: readonly string[], keys: readonly string[]): Promise<void> {
  await Promise.all(
    urls.map(async (url) => {
      const raw = new Redis(url, { maxRetriesPerRequest: 1 });
      try {
        await raw.del(...keys);
      } finally {
        raw.disconnect();
      }
    }),
  );
}

/** Deletes a lock's key on the given Redis servers. */
const deleteRedisLock = (urls: readonly string[], key: string, namespace = 'dlock:'): Promise<void> => deleteRedisKeys(urls, [redisLockKeys(namespace, key).keys[0]]);

const redisUrls = (): string[] => requiredEnv('LOCK_TEST_REDIS_URLS').split(',');

/** Deletes keys (of one hash slot) in a Redis Cluster with a throwaway client, which finds their master itself. */
async function deleteClusterKeys(urls: string, keys: readonly string[]): Promise<void> {
  const raw = clusterClient(urls);
  try {
    await raw.del(...keys);
  } finally {
    raw.disconnect();
  }
}

const mysqlOptions = (): DataSourceOptions => ({ type: 'mysql', url: requiredEnv('LOCK_TEST_MYSQL_URL'), poolSize: 12, connectTimeout: 5_000 });

const postgresOptions = (): DataSourceOptions => ({ type: 'postgres', url: requiredEnv('LOCK_TEST_POSTGRES_URL'), poolSize: 12, connectTimeoutMS: 5_000 });

/** One SQLite file per test run, shared by every client and child process of the run. */
function sqliteOptions(): DataSourceOptions {
  process.env.LOCK_TEST_SQLITE_PATH ??= join(tmpdir(), `lock-contract-${process.pid}-${Date.now()}.sqlite`);
  return { type: 'better-sqlite3', database: process.env.LOCK_TEST_SQLITE_PATH, enableWAL: true, timeout: 10_000 };
}

/**
 * A TypeORM data source, its package loaded on first use: every worker process of the cross-process tests
 * loads this file, and most of them never touch a database (the heavy client packages load only where used).
 */
async function newDataSource(options: DataSourceOptions): Promise<DataSource> {
  return new (await import('typeorm')).DataSource(options);
}

/** Runs one statement on a short-lived connection of its own, as an operator would from a console. */
async function adminQuery(options: DataSourceOptions, sql: string, parameters: unknown[] = []): Promise<unknown> {
  const admin = await newDataSource(options);
  await admin.initialize();
  try {
    return await admin.query(sql, parameters);
  } finally {
    await admin.destroy();
  }
}

/** Deletes every key under `prefix` in etcd, as an operator would with `etcdctl del --prefix`. */
async function deleteEtcdPrefix(hosts: string, prefix: string): Promise<void> {
  const raw: Etcd3 = new (await import('etcd3')).Etcd3({ hosts: hosts.split(',') });
  try {
    await raw.delete().prefix(prefix).exec();
  } finally {
    raw.close();
  }
}

/** Deletes every child of `path` (a lock's contenders, a semaphore's permits) in ZooKeeper with a client of its own, as an operator would. */
async function deleteZooKeeperChildren(connect: string, path: string): Promise<void> {
  const session = new ZooKeeperSession({ connect }, 'zookeeper-admin', 10_000);
  try {
    const raw = await session.client();
    for (const child of await raw.get_children(path, false)) await raw.delete_(`${path}/${child}`, -1);
  } finally {
    await session.close();
  }
}

/**
 * After the server ended a holder's session (and its process or thread is gone): the holder's client reads
 * the server's goodbye before the section goes on, as it would long before its section ends in real life.
 * A COMMIT that crosses the end on the wire has an unknown outcome (LockCommitFailedError 'unknown', tested on
 * its own), which is not the case a removal stands for. The setImmediate after the timer lets one poll phase
 * run: a timer's callback is followed at once by the section's own continuation, ahead of the socket's data.
 * (Seen: with a 50 ms sleep alone, a PostgreSQL backend still exiting under a full run's load got the COMMIT,
 * and the property suite read LockCommitFailedError for a removal.)
 */
async function holderReadsGoodbye(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 50));
  await new Promise((resolve) => setImmediate(resolve));
}

/** Resolves once MariaDB no longer lists connection `id` (a KILL returns before the connection's thread ends). */
async function untilMysqlConnectionGone(id: number): Promise<void> {
  for (const giveUpAt = Date.now() + 5_000; Date.now() < giveUpAt; ) {
    const rows = (await adminQuery(mysqlOptions(), 'SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE ID = ?', [id])) as Array<{ n: number | string }>;
    if (Number(rows[0]?.n) === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`MariaDB connection ${id} was still listed 5 s after its KILL`);
}

/** Kills the connection whose transaction holds the row lock (the fencing table names it). */
async function killPessimisticHolder(key: string): Promise<void> {
  let killed: number | undefined;
  const admin = await newDataSource(mysqlOptions());
  await admin.initialize();
  const runner = admin.createQueryRunner();
  try {
    const rows = (await runner.query('SELECT locked_by_connection AS id FROM distributed_lock_fences WHERE lock_key = ?', [key])) as Array<{ id: number | null }>;
    killed = rows[0]?.id ? Number(rows[0].id) : undefined;
    if (killed !== undefined) await runner.query(`KILL ${killed}`);
  } finally {
    await runner.release();
    await admin.destroy();
  }
  if (killed !== undefined) await untilMysqlConnectionGone(killed);
  await holderReadsGoodbye();
}

/** Terminates the PostgreSQL backend whose transaction holds the row lock (the fencing table names it), as an operator would. */
async function terminatePessimisticHolder(key: string): Promise<void> {
  // With a timeout, pg_terminate_backend returns once the backend has exited (PostgreSQL 14+), not once it was signalled.
  await adminQuery(postgresOptions(), 'SELECT pg_terminate_backend(locked_by_connection::int, 5000) FROM distributed_lock_fences WHERE lock_key = $1 AND locked_by_connection IS NOT NULL', [key]);
  await holderReadsGoodbye();
}

/** Terminates the PostgreSQL backend holding a key's advisory lock (session or transaction level), as an operator would. */
async function terminateAdvisoryHolder(key: string): Promise<void> {
  const bits = BigInt.asUintN(64, BigInt(postgresAdvisoryKey(key)));
  await adminQuery(
    postgresOptions(),
    "SELECT pg_terminate_backend(pid, 5000) FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = $1::oid AND objid = $2::oid AND objsubid = 1",
    [String(bits >> 32n), String(bits & 0xffffffffn)],
  );
  await holderReadsGoodbye();
}

/** Kills the MariaDB connection holding a key's GET_LOCK, as an operator would. */
async function killGetLockHolder(key: string): Promise<void> {
  const rows = (await adminQuery(mysqlOptions(), 'SELECT IS_USED_LOCK(?) AS id', [getLockName(key)])) as Array<{ id: number | null }>;
  if (rows[0]?.id) {
    await adminQuery(mysqlOptions(), `KILL ${Number(rows[0].id)}`);
    await untilMysqlConnectionGone(Number(rows[0].id));
  }
  await holderReadsGoodbye();
}

/**
 * Every strategy the contract suite runs against. Backends whose servers the test setup starts add
 * their line here; the cross-process worker looks subjects up by name.
 */
// In-process locks are shared through one strategy object: that object is "the server" both clients talk to.
let memoryServer: InMemoryLockStrategy | undefined;

/** A client of the shared in-memory "server": every call goes to it, except close(), which is the client's own. */
function clientOf(server: InMemoryLockStrategy): LockStrategy {
  return new Proxy(server, {
    get: (target, property) => (property === 'close' ? async () => undefined : Reflect.get(target, property, target)),
  });
}

/**
 * A database lock held by a connection pinned for it (`query` names its holder from the fence row and the
 * server's own record of the connection that holds it): the server keeps no lease end and no queue it could
 * name waiters from, and a break ends the holder's session.
 */
const answersFromItsConnection = { answersQuery: true, queryWithoutLeaseEnd: true, queryWithoutQueue: true, breakEndsSession: true } as const;

export const subjects: readonly ContractSubject[] = [
  {
    name: 'memory',
    answersQuery: true,
    answersPrefixQuery: true,
    answersPermitQuery: true,
    pushesRemoval: true,
    capabilities: new InMemoryLockStrategy().capabilities,
    // Each client closes only itself: closing one instance must not close "the server" for the others.
    create: async () => clientOf((memoryServer ??= new InMemoryLockStrategy())),
    removeBehindBack: async (_strategy: LockStrategy, key: string) => memoryServer?.forceRelease(key),
    removePermitsBehindBack: async (key) => memoryServer?.semaphore.forceRelease(key),
  },
  {
    name: 'redis (fair)',
    answersQuery: true,
    answersPrefixQuery: true,
    answersPermitQuery: true,
    capabilities: { fencing: true, fifo: true, sharedLocks: true, crossProcess: true, semaphores: { fifo: true, fencing: true } },
    create: async () => new RedisLockStrategy({ connection: requiredEnv('LOCK_TEST_REDIS_URL') }),
    removeBehindBack: (_strategy, key) => deleteRedisLock([requiredEnv('LOCK_TEST_REDIS_URL')], key),
    removePermitsBehindBack: (key) => deleteRedisKeys([requiredEnv('LOCK_TEST_REDIS_URL')], redisSemaphoreKeys('dlock:', key).keys),
  },
  {
    name: 'redis (barging)',
    answersQuery: true,
    answersPrefixQuery: true,
    answersPermitQuery: true,
    capabilities: { fencing: true, fifo: false, sharedLocks: true, crossProcess: true, semaphores: { fifo: false, fencing: true } },
    permitsQueued: true,
    create: async () => new RedisLockStrategy({ connection: requiredEnv('LOCK_TEST_REDIS_URL'), fair: false, name: 'redis-barging' }),
    removeBehindBack: (_strategy, key) => deleteRedisLock([requiredEnv('LOCK_TEST_REDIS_URL')], key),
    removePermitsBehindBack: (key) => deleteRedisKeys([requiredEnv('LOCK_TEST_REDIS_URL')], redisSemaphoreKeys('dlock:', key).keys),
  },
  {
    name: 'redis (Cluster, 3 masters)',
    answersQuery: true,
    answersPermitQuery: true,
    capabilities: { fencing: true, fifo: true, sharedLocks: true, crossProcess: true, semaphores: { fifo: true, fencing: true } },
    topology: 'redis-cluster',
    create: async () => clusterStrategy(requiredEnv('LOCK_TEST_REDIS_CLUSTER'), { name: 'redis-cluster' }),
    removeBehindBack: (_strategy, key) => deleteClusterKeys(requiredEnv('LOCK_TEST_REDIS_CLUSTER'), [redisLockKeys('dlock:', key).keys[0]]),
    removePermitsBehindBack: (key) => deleteClusterKeys(requiredEnv('LOCK_TEST_REDIS_CLUSTER'), redisSemaphoreKeys('dlock:', key).keys),
  },
  {
    name: 'redlock (5 masters)',
    answersQuery: true,
    queryWithoutGrantTime: true,
    capabilities: { fencing: false, fifo: false, sharedLocks: false, crossProcess: true },
    create: async () => new RedlockStrategy({ connections: redisUrls() }),
    removeBehindBack: (_strategy, key) => deleteRedisLock(redisUrls(), key, 'dlock:redlock:'),
  },
  {
    name: 'row (MariaDB)',
    queuesWaiters: true,
    answersQuery: true,
    answersPrefixQuery: true,
    answersPermitQuery: true,
    capabilities: { fencing: true, fifo: false, sharedLocks: false, crossProcess: true, semaphores: { fifo: false, fencing: true } },
    create: async () => new RowLockStrategy({ connection: mysqlOptions() }),
    removeBehindBack: async (_strategy, key) => {
      await adminQuery(mysqlOptions(), 'DELETE FROM distributed_lock_leases WHERE lock_key = ?', [key]);
    },
    removePermitsBehindBack: async (key) => {
      await adminQuery(mysqlOptions(), 'DELETE FROM distributed_lock_permits WHERE semaphore_key = ?', [key]);
    },
  },
  {
    name: 'row (SQLite)',
    queuesWaiters: true,
    answersQuery: true,
    answersPrefixQuery: true,
    answersPermitQuery: true,
    capabilities: { fencing: true, fifo: false, sharedLocks: false, crossProcess: true, semaphores: { fifo: false, fencing: true } },
    create: async () => new RowLockStrategy({ connection: sqliteOptions(), name: 'database-sqlite' }),
    removeBehindBack: async (_strategy, key) => {
      await adminQuery(sqliteOptions(), 'DELETE FROM distributed_lock_leases WHERE lock_key = ?', [key]);
    },
    removePermitsBehindBack: async (key) => {
      await adminQuery(sqliteOptions(), 'DELETE FROM distributed_lock_permits WHERE semaphore_key = ?', [key]);
    },
  },
  {
    name: 'row (PostgreSQL)',
    queuesWaiters: true,
    answersQuery: true,
    answersPrefixQuery: true,
    answersPermitQuery: true,
    capabilities: { fencing: true, fifo: false, sharedLocks: false, crossProcess: true, semaphores: { fifo: false, fencing: true } },
    create: async () => new RowLockStrategy({ connection: postgresOptions(), name: 'database-postgres' }),
    removeBehindBack: async (_strategy, key) => {
      await adminQuery(postgresOptions(), 'DELETE FROM distributed_lock_leases WHERE lock_key = $1', [key]);
    },
    removePermitsBehindBack: async (key) => {
      await adminQuery(postgresOptions(), 'DELETE FROM distributed_lock_permits WHERE semaphore_key = $1', [key]);
    },
  },
  {
    name: 'pessimistic (PostgreSQL)',
    pushesRemoval: true,
    ...answersFromItsConnection,
    capabilities: { fencing: true, fifo: false, sharedLocks: false, crossProcess: true },
    create: async () => new PessimisticLockStrategy({ connection: postgresOptions(), name: 'pessimistic-postgres' }),
    removeBehindBack: (_strategy, key) => terminatePessimisticHolder(key),
  },
  {
    name: 'advisory (PostgreSQL)',
    pushesRemoval: true,
    ...answersFromItsConnection,
    queryShowsUnnamedHolders: true,
    capabilities: { fencing: true, fifo: true, sharedLocks: false, crossProcess: true },
    create: async () => new AdvisoryLockStrategy({ connection: postgresOptions(), holders: true }),
    removeBehindBack: (_strategy, key) => terminateAdvisoryHolder(key),
  },
  {
    name: 'advisory GET_LOCK (MariaDB)',
    pushesRemoval: true,
    ...answersFromItsConnection,
    queryShowsUnnamedHolders: true,
    capabilities: { fencing: true, fifo: true, sharedLocks: false, crossProcess: true },
    create: async () => new AdvisoryLockStrategy({ connection: mysqlOptions(), name: 'advisory-mysql' }),
    removeBehindBack: (_strategy, key) => killGetLockHolder(key),
  },
  {
    name: 'pessimistic (MariaDB)',
    pushesRemoval: true,
    capabilities: { fencing: true, fifo: false, sharedLocks: false, crossProcess: true },
    create: async () => new PessimisticLockStrategy({ connection: mysqlOptions() }),
    removeBehindBack: (_strategy, key) => killPessimisticHolder(key),
  },
  {
    name: 'etcd (single node)',
    pushesRemoval: true,
    answersQuery: true,
    answersPrefixQuery: true,
    answersPermitQuery: true,
    queryWithoutTimes: true,
    capabilities: { fencing: true, fifo: true, sharedLocks: true, crossProcess: true, semaphores: { fifo: true, fencing: true } },
    create: async () => new EtcdLockStrategy({ connection: { hosts: requiredEnv('LOCK_TEST_ETCD').split(',') } }),
    removeBehindBack: (_strategy, key) => deleteEtcdPrefix(requiredEnv('LOCK_TEST_ETCD'), `dlock/${encodeURIComponent(key)}/`),
    removePermitsBehindBack: (key) => deleteEtcdPrefix(requiredEnv('LOCK_TEST_ETCD'), etcdSemaphorePrefix('dlock/', key)),
  },
  {
    name: 'etcd (3-node cluster)',
    pushesRemoval: true,
    answersQuery: true,
    answersPrefixQuery: true,
    answersPermitQuery: true,
    queryWithoutTimes: true,
    capabilities: { fencing: true, fifo: true, sharedLocks: true, crossProcess: true, semaphores: { fifo: true, fencing: true } },
    topology: 'etcd3',
    create: async () => new EtcdLockStrategy({ connection: { hosts: requiredEnv('LOCK_TEST_ETCD_CLUSTER').split(',') }, name: 'etcd-cluster' }),
    removeBehindBack: (_strategy, key) => deleteEtcdPrefix(requiredEnv('LOCK_TEST_ETCD_CLUSTER'), `dlock/${encodeURIComponent(key)}/`),
    removePermitsBehindBack: (key) => deleteEtcdPrefix(requiredEnv('LOCK_TEST_ETCD_CLUSTER'), etcdSemaphorePrefix('dlock/', key)),
  },
  {
    name: 'zookeeper (standalone)',
    pushesRemoval: true,
    answersQuery: true,
    answersPrefixQuery: true,
    answersPermitQuery: true,
    queryWithoutTimes: true,
    capabilities: { fencing: true, fifo: true, sharedLocks: true, crossProcess: true, semaphores: { fifo: true, fencing: true } },
    create: async () => new ZooKeeperLockStrategy({ connect: requiredEnv('LOCK_TEST_ZOOKEEPER'), sessionTimeout: 4_000 }),
    removeBehindBack: (_strategy, key) => deleteZooKeeperChildren(requiredEnv('LOCK_TEST_ZOOKEEPER'), zkLockPath('/dlock', key)),
    removePermitsBehindBack: (key) => deleteZooKeeperChildren(requiredEnv('LOCK_TEST_ZOOKEEPER'), zkSemaphorePath('/dlock', key)),
  },

  {
    name: 'zookeeper (3-node ensemble)',
    pushesRemoval: true,
    answersQuery: true,
    answersPrefixQuery: true,
    answersPermitQuery: true,
    queryWithoutTimes: true,
    capabilities: { fencing: true, fifo: true, sharedLocks: true, crossProcess: true, semaphores: { fifo: true, fencing: true } },
    topology: 'zookeeper3',
    create: async () => new ZooKeeperLockStrategy({ connect: requiredEnv('LOCK_TEST_ZOOKEEPER_ENSEMBLE'), sessionTimeout: 4_000, name: 'zookeeper-ensemble' }),
    removeBehindBack: (_strategy, key) => deleteZooKeeperChildren(requiredEnv('LOCK_TEST_ZOOKEEPER_ENSEMBLE'), zkLockPath('/dlock', key)),
    removePermitsBehindBack: (key) => deleteZooKeeperChildren(requiredEnv('LOCK_TEST_ZOOKEEPER_ENSEMBLE'), zkSemaphorePath('/dlock', key)),
  },
  { ...memcachedSubject(), answersQuery: true, queryWithoutTimes: true, queryWithoutQueue: true },
];

/**
 * The strategies that take fast paths through their client's internals (typeorm-internals.ts), with
 * `fastPaths: false`: the public-API fallback passes the same contract.
 * Run by fast-paths-off.spec.ts (the contract only, not the promises and property suites).
 */
export const fastPathsOffSubjects: readonly ContractSubject[] = [
  {
    name: 'row (MariaDB, fastPaths: false)',
    queuesWaiters: true,
    answersQuery: true,
    answersPrefixQuery: true,
    answersPermitQuery: true,
    capabilities: { fencing: true, fifo: false, sharedLocks: false, crossProcess: true, semaphores: { fifo: false, fencing: true } },
    create: async () => new RowLockStrategy({ connection: mysqlOptions(), name: 'database-public-api', fastPaths: false }),
    removeBehindBack: async (_strategy, key) => {
      await adminQuery(mysqlOptions(), 'DELETE FROM distributed_lock_leases WHERE lock_key = ?', [key]);
    },
    removePermitsBehindBack: async (key) => {
      await adminQuery(mysqlOptions(), 'DELETE FROM distributed_lock_permits WHERE semaphore_key = ?', [key]);
    },
  },
  {
    name: 'pessimistic (MariaDB, fastPaths: false)',
    pushesRemoval: true,
    capabilities: { fencing: true, fifo: false, sharedLocks: false, crossProcess: true },
    create: async () => new PessimisticLockStrategy({ connection: mysqlOptions(), name: 'pessimistic-public-api', fastPaths: false }),
    removeBehindBack: (_strategy, key) => killPessimisticHolder(key),
  },
];

/**
 * Another setting of a strategy that `subjects` holds with its default, sharing its lock protocol: the
 * contract only, and the query contract where the setting answers it (option-variants.spec.ts), which
 * keeps the promises and property suites' time for strategies of their own. `scope: 'transaction'` changes
 * what wraps the lock (BEGIN, COMMIT), which test/integration/advisory.int.spec.ts checks with writes;
 * `holders: true` adds a mark to each hold of the pessimistic strategy on MariaDB; `localHandover` passes a
 * ZooKeeper lock within a process, which the promises suite checks too (`promises`).
 */
export const optionVariantSubjects: readonly ContractSubject[] = [
  {
    name: 'advisory transaction (PostgreSQL)',
    pushesRemoval: true,
    capabilities: { fencing: true, fifo: true, sharedLocks: false, crossProcess: true, transactional: true },
    create: async () => new AdvisoryLockStrategy({ connection: postgresOptions(), scope: 'transaction', name: 'advisory-xact' }),
    removeBehindBack: (_strategy, key) => terminateAdvisoryHolder(key),
  },
  {
    // Each hold marks itself with a GET_LOCK, taken after its token is written and let go before its COMMIT.
    name: 'pessimistic holders (MariaDB)',
    pushesRemoval: true,
    ...answersFromItsConnection,
    queryShowsUnnamedHolders: true,
    capabilities: { fencing: true, fifo: false, sharedLocks: false, crossProcess: true },
    create: async () => new PessimisticLockStrategy({ connection: mysqlOptions(), name: 'pessimistic-holders', holders: true }),
    removeBehindBack: (_strategy, key) => killPessimisticHolder(key),
  },
  {
    // Lock cohorting: a release passes the node to the next request of the instance with one versioned write.
    name: 'zookeeper cohorts',
    // Cohorts change how a lock is handed over: the promises too, not only the contract and the query.
    promises: true,
    pushesRemoval: true,
    answersQuery: true,
    answersPrefixQuery: true,
    answersPermitQuery: true,
    queryWithoutTimes: true,
    capabilities: { fencing: true, fifo: false, sharedLocks: true, crossProcess: true, semaphores: { fifo: true, fencing: true } },
    create: async () => new ZooKeeperLockStrategy({ connect: requiredEnv('LOCK_TEST_ZOOKEEPER'), sessionTimeout: 4_000, localHandover: {}, name: 'zookeeper-cohort' }),
    removeBehindBack: (_strategy, key) => deleteZooKeeperChildren(requiredEnv('LOCK_TEST_ZOOKEEPER'), zkLockPath('/dlock', key)),
    removePermitsBehindBack: (key) => deleteZooKeeperChildren(requiredEnv('LOCK_TEST_ZOOKEEPER'), zkSemaphorePath('/dlock', key)),
  },
];

/**
 * Subjects whose servers are 20 ms of round trip away (a latency proxy in front of each): the watchdog,
 * operation timeouts and Redlock's drift allowance must hold across zones too. Long: run by `npm run
 * test:long`, not `npm test`.
 */
export const distantSubjects: readonly ContractSubject[] = [
  atDistance(find(subjects, 'redis (fair)'), ['LOCK_TEST_REDIS_URL'], 20),
  atDistance(find(subjects, 'redlock (5 masters)'), ['LOCK_TEST_REDIS_URLS'], 20),
  atDistance(find(subjects, 'row (MariaDB)'), ['LOCK_TEST_MYSQL_URL'], 20),
  atDistance(find(subjects, 'etcd (single node)'), ['LOCK_TEST_ETCD'], 20),
  atDistance(find(subjects, 'zookeeper (standalone)'), ['LOCK_TEST_ZOOKEEPER'], 20),
];

function find(list: readonly ContractSubject[], name: string): ContractSubject {
  const subject = list.find((candidate) => candidate.name === name);
  if (!subject) throw new Error(`No contract subject named "${name}"`);
  return subject;
}

/** A subject of any list, by name (the cross-process worker finds its subject this way). */
/**
 * Subjects for single checks in worker processes, not for the whole contract: Redlock with its first master
 * down (nothing listens on port 1), where contenders that come together can split the votes of the other
 * four with nobody ahead in a line.
 */
export const probeSubjects: readonly ContractSubject[] = [
  {
    name: 'redlock (first master down)',
    capabilities: { fencing: false, fifo: false, sharedLocks: false, crossProcess: true },
    create: async () => new RedlockStrategy({ connections: ['redis://127.0.0.1:1', ...redisUrls().slice(0, 4)], name: 'redlock-first-down' }),
    removeBehindBack: (_strategy, key) => deleteRedisLock(redisUrls().slice(0, 4), key, 'dlock:redlock:'),
  },
];

export function subjectNamed(name: string): ContractSubject {
  return find([...subjects, ...fastPathsOffSubjects, ...optionVariantSubjects, ...distantSubjects, ...probeSubjects], name);
}
