import { HistoryLog } from '../test/support/history/history-log';
import { InMemoryLockStrategy, LockManager, LockService, type LockStrategy } from '@app/distributed-lock';
import { RedisLockStrategy, RedlockStrategy } from '@app/distributed-lock/strategies/redis';
import { redisLockKeys, type RedisLockKeys } from '@app/distributed-lock/strategies/redis/redis-keys';
import { ACQUIRE_SCRIPT, RELEASE_SCRIPT } from '@app/distributed-lock/strategies/redis/redis-lock.scripts';
import { fenceTableDdl, leaseTableDdl, PessimisticLockStrategy, RowLockStrategy, rowTableDdl } from '@app/distributed-lock/strategies/database';
import { pessimisticStatements } from '@app/distributed-lock/strategies/database/pessimistic-lock.sql';
import { rowLockStatements } from '@app/distributed-lock/strategies/database/row-lock.sql';
import { SQL_DIALECTS, type SqlDialect } from '@app/distributed-lock/strategies/database/sql-dialect';
import { EtcdLockStrategy } from '@app/distributed-lock/strategies/etcd';
import { etcdContenderKey, etcdLockPrefix } from '@app/distributed-lock/strategies/etcd/etcd-keys';
import { ZooKeeperLockStrategy } from '@app/distributed-lock/strategies/zookeeper';
import { MemcachedLockStrategy } from '@app/distributed-lock/strategies/memcached';
import { MEMCACHED_COMMANDS_FLOOR, MEMCACHED_FLOOR, rawMemcachedCommandsFloor, rawMemcachedFloor } from './floors/memcached';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { Redis } from 'ioredis';
import { createPool, type Pool, type ResultSetHeader, type RowDataPacket } from 'mysql2/promise';
import ZooKeeper from 'zookeeper';
import type { BenchLock, BenchSubject } from './bench-subject';
import { connectZooKeeper, env, redisUrls } from './bench-env';
import { PEER_SUBJECTS } from './peers';
import { callbackConnection, callbackPool, rawQuery } from './raw-mysql';


/** Our lock service over a strategy, used the way an application would: acquire, then release. */
function ours(createStrategy: () => LockStrategy): () => Promise<BenchLock> {
  return async () => {
    const manager = new LockManager(createStrategy());
    const locks = new LockService(manager);
    // The soak records every hold for the history checker (see bench/soak.ts); the benchmark does not.
    const history = process.env.LOCK_HISTORY_FILE ? new HistoryLog(process.env.LOCK_HISTORY_FILE) : undefined;
    const holder = `pid-${process.pid}`;
    return {
      async acquire(key, waitMs) {
        const lock = await locks.acquire(key, { waitTimeout: waitMs });
        const hold = history?.begin(holder, lock);
        return async () => {
          hold?.sectionEnded();
          const held = await lock.release();
          hold?.outcome(held ? 'resolved' : 'LockLostError');
        };
      },
      close: () => manager.close(),
    };
  };
}

const RELEASE_IF_OWNER = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/**
 * The raw floor: `SET key owner NX PX` to take, one `EVAL` (compare-and-delete) to release, on `urls`
 * (a majority needed when several). Waiting is a bare retry after yielding to the event loop: no
 * queue, no notification, no watchdog, no validation.
 */
function rawRedisFloor(urls: () => string[]): () => Promise<BenchLock> {
  return async () => {
    const clients = urls().map((url) => new Redis(url));
    const quorum = Math.floor(clients.length / 2) + 1;
    return {
      async acquire(key, waitMs) {
        const owner = randomUUID();
        const deadline = Date.now() + waitMs;
        for (;;) {
          const replies = await Promise.all(clients.map((client) => client.set(key, owner, 'PX', 30_000, 'NX')));
          const got = replies.filter((reply) => reply === 'OK').length;
          if (got >= quorum) {
            return async () => {
              await Promise.all(clients.map((client) => client.eval(RELEASE_IF_OWNER, 1, key, owner)));
            };
          }
          if (got > 0) await Promise.all(clients.map((client) => client.eval(RELEASE_IF_OWNER, 1, key, owner)));
          if (Date.now() > deadline) throw new Error('timeout');
          await new Promise((resolve) => setImmediate(resolve));
        }
      },
      close: async () => {
        await Promise.all(clients.map((client) => client.quit()));
      },
    };
  };
}

/**
 * The Redis strategy's own server operations, raw: its acquire script (a plain try) and its release
 * script by EVALSHA through ioredis, with the arguments the strategy sends; a busy lock is retried after
 * yielding. Nothing of the library runs: no key-name cache, no validation, no watchdog, no lock service.
 * Against `floor:redis SET NX PX + EVAL` it shows what the FIFO queue, the fencing counter and re-entrancy
 * cost the server; the strategy against it, what the library's code adds.
 */
function rawRedisScriptsFloor(): () => Promise<BenchLock> {
  return async () => {
    const client = new Redis(env('LOCK_TEST_REDIS_URL'));
    const [acquireSha, releaseSha] = (await Promise.all([ACQUIRE_SCRIPT, RELEASE_SCRIPT].map((script) => client.script('LOAD', script)))) as string[];
    const names = new Map<string, RedisLockKeys>();
    return {
      async acquire(key, waitMs) {
        let lock = names.get(key);
        if (!lock) names.set(key, (lock = redisLockKeys('bench-raw:', key)));
        const { keys, channel } = lock;
        const owner = randomUUID();
        const deadline = Date.now() + waitMs;
        for (;;) {
          const [held] = (await client.evalsha(acquireSha, keys.length, ...keys, owner, channel, 30_000, '1', '0', 1_500, 'x')) as [number, unknown];
          if (held === 1) {
            return async () => {
              await client.evalsha(releaseSha, keys.length, ...keys, owner, channel);
            };
          }
          if (Date.now() > deadline) throw new Error('timeout');
          await yieldLoop();
        }
      },
      close: async () => {
        await client.quit();
      },
    };
  };
}

/**
 * One SQLite file per benchmark run, shared by its processes: the parent must choose it before it starts
 * child processes (they inherit the variable), or each child would lock its own file.
 */
export function sqlitePath(): string {
  process.env.BENCH_SQLITE_PATH ??= join(tmpdir(), `lock-bench-${process.pid}.sqlite`);
  return process.env.BENCH_SQLITE_PATH;
}

const yieldLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** The MySQL-family dialect of the server behind `pool`, as the DB strategies work it out. */
async function mysqlDialect(pool: Pool): Promise<SqlDialect> {
  const [rows] = await pool.query<RowDataPacket[]>('SELECT VERSION() AS v');
  return { ...SQL_DIALECTS.mysql, mariadb: /mariadb/i.test(String(rows[0]?.v)) };
}

/**
 * The row strategy's floor: the very statements it issues (take over the key's row, or insert it; free
 * it on release), sent through a raw mysql2 pool's callback API: no TypeORM, no validation, no watchdog. Waiting: bare
 * retries.
 */
function rawRowFloor(): () => Promise<BenchLock> {
  return async () => {
    const pool = createPool({ uri: env('LOCK_TEST_MYSQL_URL'), connectionLimit: 40 });
    const dialect = await mysqlDialect(pool);
    await pool.query(leaseTableDdl(dialect, 'bench_floor_leases'));
    const sql = rowLockStatements(dialect, 'bench_floor_leases');
    const raw = callbackPool(pool);
    const ttlMs = 30_000;
    return {
      async acquire(key, waitMs) {
        const owner = randomUUID();
        const deadline = Date.now() + waitMs;
        for (;;) {
          const taken = await rawQuery<ResultSetHeader>(raw, sql.takeOver, [owner, owner, ttlMs, owner, key, owner]);
          if (taken.affectedRows === 1) break;
          try {
            await rawQuery(raw, sql.insert, [key, owner, ttlMs]);
            break;
          } catch (error) {
            if ((error as { errno?: number }).errno !== 1062 || Date.now() > deadline) throw error;
            await yieldLoop();
          }
        }
        return async () => {
          await rawQuery(raw, sql.releaseLast, [key, owner]);
        };
      },
      close: () => pool.end(),
    };
  };
}

/**
 * The pessimistic strategy's floor: its statements through a raw mysql2 pool's callback API. The key's row once per key;
 * per section, on one connection: START TRANSACTION, the row's FOR UPDATE (waiting on the server), the
 * next fencing token in autocommit on another connection, COMMIT.
 */
function rawPessimisticFloor(): () => Promise<BenchLock> {
  return async () => {
    const pool = createPool({ uri: env('LOCK_TEST_MYSQL_URL'), connectionLimit: 40 });
    const dialect = await mysqlDialect(pool);
    await pool.query(rowTableDdl(dialect, 'bench_floor_rows'));
    await pool.query(fenceTableDdl(dialect, 'bench_floor_fences'));
    const sql = pessimisticStatements(dialect, 'bench_floor_rows', 'bench_floor_fences');
    const raw = callbackPool(pool);
    const knownRows = new Set<string>();
    return {
      async acquire(key, waitMs) {
        if (!knownRows.has(key)) {
          const [rows] = await pool.query<RowDataPacket[]>(sql.rowExists, [key]);
          if (rows.length === 0) await pool.query(sql.insertRow, [key]);
          knownRows.add(key);
        }
        const connection = await pool.getConnection();
        const held = callbackConnection(connection);
        try {
          await rawQuery(held, 'START TRANSACTION');
          await rawQuery(held, sql.lockRow(Math.max(1, Math.ceil(waitMs / 1000))), [key]);
          await rawQuery(raw, sql.nextToken, [key, randomUUID(), connection.threadId]);
        } catch (error) {
          await rawQuery(held, 'ROLLBACK').catch(() => undefined);
          connection.release();
          throw error;
        }
        return async () => {
          await rawQuery(held, 'COMMIT');
          connection.release();
        };
      },
      close: () => pool.end(),
    };
  };
}

/** The etcd floor: a transaction that puts the key if absent, and a delete; waiting is a bare retry. */
function rawEtcdFloor(): () => Promise<BenchLock> {
  return async () => {
    const client = new Etcd3({ hosts: env('LOCK_TEST_ETCD').split(',') });
    return {
      async acquire(key, waitMs) {
        const deadline = Date.now() + waitMs;
        for (;;) {
          const txn = await client.if(key, 'Create', '==', 0).then(client.put(key).value('x')).commit();
          if (txn.succeeded) {
            return async () => {
              await client.delete().key(key).exec();
            };
          }
          if (Date.now() > deadline) throw new Error('timeout');
          await yieldLoop();
        }
      },
      close: async () => client.close(),
    };
  };
}

/** The ZooKeeper floor: create a fixed ephemeral node and delete it; contenders retry its create. */
function rawZooKeeperFloor(): () => Promise<BenchLock> {
  return async () => {
    const client = await connectZooKeeper('/bench-floor');
    return {
      async acquire(key, waitMs) {
        const path = `/bench-floor/${encodeURIComponent(key)}`;
        const deadline = Date.now() + waitMs;
        for (;;) {
          try {
            await client.create(path, '', ZooKeeper.constants.ZOO_EPHEMERAL);
            return async () => {
              await client.delete_(path, -1);
            };
          } catch (error) {
            if (!String((error as Error).message).startsWith('-110') || Date.now() > deadline) throw error;
            await yieldLoop();
          }
        }
      },
      close: async () => client.close(),
    };
  };
}

/**
 * The etcd strategy's own server operations for a free lock, raw: the put-if-absent transaction of a
 * contender key under the lock's prefix, bound to a lease (granted once, before the measured sections,
 * as the strategy's pooled leases are) and reading the newest key before it in the same transaction;
 * then the key's delete, conditional on its create revision as the strategy's release is. A key ahead:
 * delete and retry after yielding. Against `floor:etcd txn put +
 * delete` it shows what the lease and the read cost the server; ours against it, what the library adds.
 */
function rawEtcdRecipeFloor(): () => Promise<BenchLock> {
  return async () => {
    const client = new Etcd3({ hosts: env('LOCK_TEST_ETCD').split(',') });
    // Long enough for any case of the run; revoked (with its keys) on close.
    const lease = client.lease(600, { autoKeepAlive: false });
    const leaseId = await lease.grant();
    return {
      async acquire(key, waitMs) {
        const prefix = etcdLockPrefix('bench-floor-recipe/', key);
        const own = etcdContenderKey(prefix, 'exclusive', leaseId);
        const deadline = Date.now() + waitMs;
        for (;;) {
          const newest = client.getAll().prefix(prefix).sort('Create', 'Descend').limit(1);
          const txn = await client.if(own, 'Create', '==', 0).then(newest, client.put(own).value('x').lease(leaseId)).commit();
          if (!txn.succeeded) throw new Error(`${own} already exists`);
          if ((txn.responses[0]?.response_range?.kvs ?? []).length === 0) {
            const createRevision = String(txn.header.revision);
            // The strategy's release: a delete conditional on the key still being ours (one round trip).
            return async () => {
              await client.if(own, 'Create', '==', createRevision).then(client.delete().key(own)).commit();
            };
          }
          await client.delete().key(own).exec();
          if (Date.now() > deadline) throw new Error('timeout');
          await yieldLoop();
        }
      },
      close: async () => {
        await lease.revoke().catch(() => undefined);
        client.close();
      },
    };
  };
}

/**
 * The ZooKeeper strategy's own server operations for a free lock, raw: a protected ephemeral sequential
 * node created under the lock's node with the children listing sent right behind it (as the strategy
 * does), then its delete; not the lowest: delete and retry after yielding. Through the package's promise
 * API like `floor:zookeeper create + delete` (the strategy calls the package's native binding directly, a
 * little cheaper per call). Against that floor it shows what the listing, the call the sequential recipe
 * adds, costs.
 */
function rawZooKeeperRecipeFloor(): () => Promise<BenchLock> {
  return async () => {
    const base = '/bench-floor-recipe';
    const client = await connectZooKeeper(base);
    const lockNodes = new Set<string>();
    const sequenceOf = (name: string): string => name.slice(-10);
    return {
      async acquire(key, waitMs) {
        const lockPath = `${base}/${encodeURIComponent(key)}`;
        if (!lockNodes.has(lockPath)) {
          await client.create(lockPath, '', ZooKeeper.constants.ZOO_PERSISTENT).catch(() => undefined);
          lockNodes.add(lockPath);
        }
        const deadline = Date.now() + waitMs;
        for (;;) {
          const creating = client.create(`${lockPath}/${randomUUID()}-`, '', ZooKeeper.constants.ZOO_EPHEMERAL | ZooKeeper.constants.ZOO_SEQUENCE);
          const listing = client.get_children(lockPath, false);
          const [path, children] = await Promise.all([creating, listing]);
          const ours = sequenceOf(path);
          if (children.every((child) => sequenceOf(child) >= ours)) {
            return async () => {
              await client.delete_(path, -1);
            };
          }
          await client.delete_(path, -1);
          if (Date.now() > deadline) throw new Error('timeout');
          await yieldLoop();
        }
      },
      close: async () => client.close(),
    };
  };
}

const ROW_FLOOR = 'floor:mysql row strategy SQL (UPDATE take-over + UPDATE free)';
const PESSIMISTIC_FLOOR = 'floor:mysql pessimistic strategy SQL (FOR UPDATE + token upsert + COMMIT)';
const ZOOKEEPER_RECIPE_FLOOR = 'floor:zookeeper sequential create + listing + delete';
const REDIS_SCRIPTS_FLOOR = 'floor:redis the strategy\'s scripts (EVALSHA acquire + release)';
const ETCD_RECIPE_FLOOR = 'floor:etcd the strategy\'s txn (put with lease + read of the key ahead) + conditional delete';

/** Every subject the benchmark knows, in report order. */
export const BENCH_SUBJECTS: readonly BenchSubject[] = [
  {
    id: 'memory',
    subject: 'memory',
    ours: true,
    backend: 'memory',
    settings: 'InMemoryLockStrategy, FIFO',
    crossProcess: false,
    create: ours(() => new InMemoryLockStrategy()),
  },
  {
    id: 'redis',
    subject: 'redis',
    floor: 'floor:redis SET NX PX + EVAL',
    protocolFloor: REDIS_SCRIPTS_FLOOR,
    ours: true,
    backend: 'redis',
    settings: 'RedisLockStrategy fair (FIFO hand-over), watchdog lease 30 s',
    crossProcess: true,
    create: ours(() => new RedisLockStrategy({ connection: env('LOCK_TEST_REDIS_URL') })),
  },
  {
    id: 'redis-barging',
    subject: 'redis-barging',
    floor: 'floor:redis SET NX PX + EVAL',
    protocolFloor: REDIS_SCRIPTS_FLOOR,
    ours: true,
    backend: 'redis',
    settings: 'RedisLockStrategy fair: false (woken by pub/sub, race), watchdog lease 30 s',
    crossProcess: true,
    create: ours(() => new RedisLockStrategy({ connection: env('LOCK_TEST_REDIS_URL'), fair: false, name: 'redis-barging' })),
  },
  {
    id: 'redlock',
    subject: 'redlock',
    floor: 'floor:redis5 SET NX PX + EVAL on 5 masters',
    ours: true,
    backend: 'redis5',
    settings: 'RedlockStrategy over 5 masters, node timeout 100 ms, watchdog lease 30 s',
    crossProcess: true,
    create: ours(() => new RedlockStrategy({ connections: redisUrls() })),
  },
  {
    id: 'row-sqlite',
    subject: 'row-sqlite',
    ours: true,
    backend: 'sqlite',
    settings: 'RowLockStrategy on a SQLite file (WAL), polling with backoff, watchdog lease 30 s',
    crossProcess: true,
    create: ours(() => new RowLockStrategy({ connection: { type: 'better-sqlite3', database: sqlitePath(), enableWAL: true, timeout: 10_000 }, name: 'row-sqlite' })),
  },
  {
    id: 'row-mysql',
    subject: 'row-mysql',
    floor: ROW_FLOOR,
    ours: true,
    backend: 'mysql',
    settings: 'RowLockStrategy on MariaDB 10.11, polling with backoff, watchdog lease 30 s',
    crossProcess: true,
    create: ours(() => new RowLockStrategy({ connection: { type: 'mysql', url: env('LOCK_TEST_MYSQL_URL'), poolSize: 40 }, name: 'row-mysql' })),
  },
  {
    id: 'pessimistic',
    subject: 'pessimistic',
    floor: PESSIMISTIC_FLOOR,
    ours: true,
    backend: 'mysql',
    settings: 'PessimisticLockStrategy (SELECT … FOR UPDATE) on MariaDB 10.11, 36 connection slots',
    crossProcess: true,
    create: ours(() => new PessimisticLockStrategy({ connection: { type: 'mysql', url: env('LOCK_TEST_MYSQL_URL'), poolSize: 40 }, maxHeldConnections: 36 })),
  },
  {
    id: 'etcd',
    subject: 'etcd',
    floor: 'floor:etcd txn put + delete',
    protocolFloor: ETCD_RECIPE_FLOOR,
    ours: true,
    backend: 'etcd',
    settings: 'EtcdLockStrategy, a lease per held lock (pooled, reused by the next), predecessor watch, etcd 3.4',
    crossProcess: true,
    create: ours(() => new EtcdLockStrategy({ connection: { hosts: env('LOCK_TEST_ETCD').split(',') } })),
  },
  {
    id: 'zookeeper',
    subject: 'zookeeper',
    floor: 'floor:zookeeper create + delete',
    protocolFloor: ZOOKEEPER_RECIPE_FLOOR,
    ours: true,
    backend: 'zookeeper',
    settings: 'ZooKeeperLockStrategy, protected ephemeral sequential nodes, predecessor watch, ZooKeeper 3.8',
    crossProcess: true,
    create: ours(() => new ZooKeeperLockStrategy({ connect: env('LOCK_TEST_ZOOKEEPER') })),
  },
  {
    id: 'floor:redis SET NX PX + EVAL',
    subject: 'floor:redis SET NX PX + EVAL',
    ours: false,
    backend: 'redis',
    settings: 'raw ioredis, retry after setImmediate',
    crossProcess: true,
    create: rawRedisFloor(() => [env('LOCK_TEST_REDIS_URL')]),
  },
  {
    id: REDIS_SCRIPTS_FLOOR,
    subject: REDIS_SCRIPTS_FLOOR,
    ours: false,
    backend: 'redis',
    settings: 'raw ioredis EVALSHA of the Redis strategy\'s acquire (plain try) and release scripts, retry after setImmediate; uncontended only',
    crossProcess: true,
    uncontendedOnly: true,
    create: rawRedisScriptsFloor(),
  },
  {
    id: 'floor:redis5 SET NX PX + EVAL on 5 masters',
    subject: 'floor:redis5 SET NX PX + EVAL on 5 masters',
    ours: false,
    backend: 'redis5',
    settings: 'raw ioredis, 5 masters in parallel, majority, retry after setImmediate',
    crossProcess: true,
    create: rawRedisFloor(redisUrls),
  },
  {
    id: ROW_FLOOR,
    subject: ROW_FLOOR,
    ours: false,
    backend: 'mysql',
    settings: 'raw mysql2 pool, the row strategy\'s statements, retry after setImmediate',
    crossProcess: true,
    create: rawRowFloor(),
  },
  {
    id: PESSIMISTIC_FLOOR,
    subject: PESSIMISTIC_FLOOR,
    ours: false,
    backend: 'mysql',
    settings: 'raw mysql2 pool, the pessimistic strategy\'s statements (the FOR UPDATE waits on the server)',
    crossProcess: true,
    create: rawPessimisticFloor(),
  },
  {
    id: 'floor:etcd txn put + delete',
    subject: 'floor:etcd txn put + delete',
    ours: false,
    backend: 'etcd',
    settings: 'raw etcd3 client, put-if-absent transaction + delete, retry after setImmediate',
    crossProcess: true,
    create: rawEtcdFloor(),
  },
  {
    id: ETCD_RECIPE_FLOOR,
    subject: ETCD_RECIPE_FLOOR,
    ours: false,
    backend: 'etcd',
    settings: 'raw etcd3 client, put-if-absent transaction of a lease-bound key that also reads the newest key of the lock\'s prefix, delete; retry after setImmediate; uncontended only',
    crossProcess: true,
    uncontendedOnly: true,
    create: rawEtcdRecipeFloor(),
  },
  {
    id: 'floor:zookeeper create + delete',
    subject: 'floor:zookeeper create + delete',
    ours: false,
    backend: 'zookeeper',
    settings: 'raw zookeeper client, ephemeral node create + delete, retry after setImmediate',
    crossProcess: true,
    create: rawZooKeeperFloor(),
  },
  {
    id: ZOOKEEPER_RECIPE_FLOOR,
    subject: ZOOKEEPER_RECIPE_FLOOR,
    ours: false,
    backend: 'zookeeper',
    settings: 'raw zookeeper client, ephemeral sequential create with the children listing sent behind it, delete; retry after setImmediate; uncontended only',
    crossProcess: true,
    uncontendedOnly: true,
    create: rawZooKeeperRecipeFloor(),
  },
  {
    id: 'memcached',
    subject: 'memcached',
    floor: MEMCACHED_FLOOR,
    protocolFloor: MEMCACHED_COMMANDS_FLOOR,
    ours: true,
    backend: 'memcached',
    settings: 'MemcachedLockStrategy (memcache-client, text protocol), polling with backoff, one poller per key and process, watchdog lease 30 s, memcached 1.6',
    crossProcess: true,
    create: ours(() => new MemcachedLockStrategy({ connection: env('LOCK_TEST_MEMCACHED') })),
  },
  { id: MEMCACHED_FLOOR, subject: MEMCACHED_FLOOR, ours: false, backend: 'memcached', settings: 'raw memcache-client, add + delete, retry after setImmediate', crossProcess: true, create: rawMemcachedFloor() },
  {
    id: MEMCACHED_COMMANDS_FLOOR,
    subject: MEMCACHED_COMMANDS_FLOOR,
    ours: false,
    backend: 'memcached',
    settings: "raw memcache-client, the strategy's add and owner-checked release (gets + cas), retry after setImmediate; uncontended only",
    crossProcess: true,
    uncontendedOnly: true,
    create: rawMemcachedCommandsFloor(),
  },
  ...PEER_SUBJECTS,
];

export function benchSubject(id: string): BenchSubject {
  const found = BENCH_SUBJECTS.find((subject) => subject.id === id);
  if (!found) throw new Error(`unknown benchmark subject "${id}"`);
  return found;
}
