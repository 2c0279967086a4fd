// The benchmark's catalogue: every subject in report order, ours (the library through LockService), the
// raw floors (bench/floors/, one file per backend) and the peers (peers.ts).
import { HistoryLog } from '../test/support/history/history-log';
import { InMemoryLockStrategy, LockManager, LockService, type LockManagerOptions, type LockStrategy } from '@app/distributed-lock';
import { RedisLockStrategy, RedlockStrategy } from '@app/distributed-lock/strategies/redis';
import { AdvisoryLockStrategy, PessimisticLockStrategy, RowLockStrategy } from '@app/distributed-lock/strategies/database';
import { EtcdLockStrategy } from '@app/distributed-lock/strategies/etcd';
import { ZooKeeperLockStrategy } from '@app/distributed-lock/strategies/zookeeper';
import { MemcachedLockStrategy } from '@app/distributed-lock/strategies/memcached';
import { MEMCACHED_COMMANDS_FLOOR, MEMCACHED_FLOOR, rawMemcachedCommandsFloor, rawMemcachedFloor } from './floors/memcached';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchLock, BenchSubject } from './bench-subject';
import { env, redisUrls } from './bench-env';
import { rawEtcdFloor, rawEtcdRecipeFloor } from './floors/etcd';
import { rawPessimisticFloor, rawRowFloor } from './floors/mysql';
import { POSTGRES_PESSIMISTIC_FLOOR, POSTGRES_ROW_FLOOR, rawPostgresPessimisticFloor, rawPostgresRowFloor } from './floors/postgres';
import { MYSQL_ADVISORY_SQL_FLOOR, PG_ADVISORY_FLOOR, PG_ADVISORY_SQL_FLOOR, rawMysqlAdvisorySqlFloor, rawPgAdvisoryFloor, rawPgAdvisorySqlFloor } from './floors/advisory';
import { rawRedisFloor, rawRedisScriptsFloor } from './floors/redis';
import { rawZooKeeperFloor, rawZooKeeperRecipeFloor } from './floors/zookeeper';
import { PEER_SUBJECTS } from './peers';
import { SEMAPHORE_SUBJECTS } from './semaphore-subjects';
import { benchTelemetryObserver, benchTelemetrySetting } from './telemetry-sdk';

/** Our lock service over a strategy, used the way an application would: acquire, then release. */
function ours(createStrategy: () => LockStrategy, managerOptions: () => LockManagerOptions = () => ({})): () => Promise<BenchLock> {
  return async () => {
    const manager = new LockManager(createStrategy(), managerOptions());
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

/**
 * One SQLite file per benchmark run, shared by its processes: the parent must choose it before it starts
 * child processes (they inherit the variable), or each child would lock its own file.
 */
export function sqlitePath(): string {
  process.env.BENCH_SQLITE_PATH ??= join(tmpdir(), `lock-bench-${process.pid}.sqlite`);
  return process.env.BENCH_SQLITE_PATH;
}

/**
 * The lock table's barging window for a run, from BENCH_ROW_BARGE_WINDOW_MS (unset: the strategy's default),
 * to compare settings on the same code.
 */
function rowBargeWindowMs(): number | undefined {
  const value = process.env.BENCH_ROW_BARGE_WINDOW_MS;
  return value === undefined || value === '' ? undefined : Number(value);
}

/** The window in a row subject's settings, when the run sets it. */
function rowBargeWindowSetting(): string {
  const window = rowBargeWindowMs();
  return window === undefined ? '' : `, bargeWindowMs ${window}`;
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
    id: 'redis-telemetry',
    subject: 'redis-telemetry',
    floor: 'floor:redis SET NX PX + EVAL',
    baseline: 'redis',
    ours: true,
    backend: 'redis',
    settings: `the "redis" subject with OpenTelemetryLockObserver: real SDK (async context manager, batch span processor, metric reader every 10 s), exporters that discard, keys hashed; spans recorded: ${benchTelemetrySetting()}`,
    crossProcess: true,
    create: ours(() => new RedisLockStrategy({ connection: env('LOCK_TEST_REDIS_URL'), name: 'redis' }), () => ({ observer: benchTelemetryObserver() })),
  },
  {
    id: 'redis-barging',
    subject: 'redis-barging',
    floor: 'floor:redis SET NX PX + EVAL',
    protocolFloor: REDIS_SCRIPTS_FLOOR,
    ours: true,
    backend: 'redis',
    settings: 'RedisLockStrategy fair: false (bounded barging, bargeWindowMs 5, the default), watchdog lease 30 s',
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
    settings: `RowLockStrategy on a SQLite file (WAL), polling with backoff, watchdog lease 30 s${rowBargeWindowSetting()}`,
    crossProcess: true,
    create: ours(() => new RowLockStrategy({ connection: { type: 'better-sqlite3', database: sqlitePath(), enableWAL: true, timeout: 10_000 }, name: 'row-sqlite', bargeWindowMs: rowBargeWindowMs() })),
  },
  {
    id: 'row-mysql',
    subject: 'row-mysql',
    floor: ROW_FLOOR,
    ours: true,
    backend: 'mysql',
    settings: `RowLockStrategy on MariaDB 10.11, polling with backoff, watchdog lease 30 s${rowBargeWindowSetting()}`,
    crossProcess: true,
    create: ours(() => new RowLockStrategy({ connection: { type: 'mysql', url: env('LOCK_TEST_MYSQL_URL'), poolSize: 40 }, name: 'row-mysql', bargeWindowMs: rowBargeWindowMs() })),
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
    id: 'pessimistic-holders',
    subject: 'pessimistic-holders',
    floor: PESSIMISTIC_FLOOR,
    ours: true,
    backend: 'mysql',
    settings: 'PessimisticLockStrategy on MariaDB 10.11 with holders: true (a GET_LOCK marks each hold, for query and breakLock), 36 connection slots',
    crossProcess: true,
    create: ours(() => new PessimisticLockStrategy({ connection: { type: 'mysql', url: env('LOCK_TEST_MYSQL_URL'), poolSize: 40 }, maxHeldConnections: 36, holders: true, name: 'pessimistic-holders' })),
  },
  {
    id: 'advisory-mysql',
    subject: 'advisory-mysql',
    floor: 'peer:get-lock@mysql',
    protocolFloor: MYSQL_ADVISORY_SQL_FLOOR,
    ours: true,
    backend: 'mysql',
    settings: 'AdvisoryLockStrategy (GET_LOCK, waiting in the server, token row in the same statement) on MariaDB 10.11, 36 connection slots',
    crossProcess: true,
    create: ours(() => new AdvisoryLockStrategy({ connection: { type: 'mysql', url: env('LOCK_TEST_MYSQL_URL'), poolSize: 40 }, maxHeldConnections: 36, name: 'advisory-mysql' })),
  },
  {
    id: 'row-postgres',
    subject: 'row-postgres',
    floor: POSTGRES_ROW_FLOOR,
    ours: true,
    backend: 'postgres',
    settings: `RowLockStrategy on PostgreSQL 15 (TypeORM public API), polling with backoff, watchdog lease 30 s${rowBargeWindowSetting()}`,
    crossProcess: true,
    create: ours(() => new RowLockStrategy({ connection: { type: 'postgres', url: env('LOCK_TEST_POSTGRES_URL'), poolSize: 40 }, name: 'row-postgres', bargeWindowMs: rowBargeWindowMs() })),
  },
  {
    id: 'pessimistic-postgres',
    subject: 'pessimistic-postgres',
    floor: POSTGRES_PESSIMISTIC_FLOOR,
    ours: true,
    backend: 'postgres',
    settings: 'PessimisticLockStrategy (SELECT … FOR UPDATE, lock_timeout) on PostgreSQL 15, 36 connection slots',
    crossProcess: true,
    create: ours(() => new PessimisticLockStrategy({ connection: { type: 'postgres', url: env('LOCK_TEST_POSTGRES_URL'), poolSize: 40 }, maxHeldConnections: 36, name: 'pessimistic-postgres' })),
  },
  {
    id: 'advisory-postgres',
    subject: 'advisory-postgres',
    floor: PG_ADVISORY_FLOOR,
    protocolFloor: PG_ADVISORY_SQL_FLOOR,
    ours: true,
    backend: 'postgres',
    settings: 'AdvisoryLockStrategy (pg_advisory_lock, waiting in the server, token from a sequence in the same statement) on PostgreSQL 15, 36 connection slots',
    crossProcess: true,
    create: ours(() => new AdvisoryLockStrategy({ connection: { type: 'postgres', url: env('LOCK_TEST_POSTGRES_URL'), poolSize: 40 }, maxHeldConnections: 36, name: 'advisory-postgres' })),
  },
  {
    id: 'advisory-xact-postgres',
    subject: 'advisory-xact-postgres',
    floor: PG_ADVISORY_FLOOR,
    ours: true,
    backend: 'postgres',
    settings: 'AdvisoryLockStrategy scope "transaction" (BEGIN, pg_advisory_xact_lock, COMMIT) on PostgreSQL 15, 36 connection slots',
    crossProcess: true,
    create: ours(() => new AdvisoryLockStrategy({ connection: { type: 'postgres', url: env('LOCK_TEST_POSTGRES_URL'), poolSize: 40 }, maxHeldConnections: 36, scope: 'transaction', name: 'advisory-xact-postgres' })),
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
    id: 'zookeeper-cohort',
    subject: 'zookeeper-cohort',
    floor: 'floor:zookeeper create + delete',
    protocolFloor: ZOOKEEPER_RECIPE_FLOOR,
    ours: true,
    backend: 'zookeeper',
    settings: 'ZooKeeperLockStrategy localHandover {} (64 passes within 50 ms: a release passes the node to the next request of the instance with one write)',
    crossProcess: true,
    create: ours(() => new ZooKeeperLockStrategy({ connect: env('LOCK_TEST_ZOOKEEPER'), localHandover: {}, name: 'zookeeper-cohort' })),
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
    id: POSTGRES_ROW_FLOOR,
    subject: POSTGRES_ROW_FLOOR,
    ours: false,
    backend: 'postgres',
    settings: 'raw pg pool, the row strategy\'s statements, retry after setImmediate',
    crossProcess: true,
    create: rawPostgresRowFloor(),
  },
  {
    id: POSTGRES_PESSIMISTIC_FLOOR,
    subject: POSTGRES_PESSIMISTIC_FLOOR,
    ours: false,
    backend: 'postgres',
    settings: 'raw pg pool, the pessimistic strategy\'s statements (the FOR UPDATE waits on the server)',
    crossProcess: true,
    create: rawPostgresPessimisticFloor(),
  },
  {
    id: PG_ADVISORY_FLOOR,
    subject: PG_ADVISORY_FLOOR,
    ours: false,
    backend: 'postgres',
    settings: 'raw pg pool, pg_advisory_lock / pg_advisory_unlock on a connection taken for the section (waiting on the server)',
    crossProcess: true,
    create: rawPgAdvisoryFloor(),
  },
  {
    id: PG_ADVISORY_SQL_FLOOR,
    subject: PG_ADVISORY_SQL_FLOOR,
    ours: false,
    backend: 'postgres',
    settings: 'raw pg pool, the advisory strategy\'s statements as named statements: lock + nextval in one SELECT, pg_advisory_unlock',
    crossProcess: true,
    create: rawPgAdvisorySqlFloor(),
  },
  {
    id: MYSQL_ADVISORY_SQL_FLOOR,
    subject: MYSQL_ADVISORY_SQL_FLOOR,
    ours: false,
    backend: 'mysql',
    settings: 'raw mysql2 pool, the advisory strategy\'s statements: INSERT … SELECT … WHERE GET_LOCK(…) ON DUPLICATE KEY UPDATE (token), RELEASE_LOCK',
    crossProcess: true,
    create: rawMysqlAdvisorySqlFloor(),
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
  ...SEMAPHORE_SUBJECTS,
];

export function benchSubject(id: string): BenchSubject {
  const found = BENCH_SUBJECTS.find((subject) => subject.id === id);
  if (!found) throw new Error(`unknown benchmark subject "${id}"`);
  return found;
}
