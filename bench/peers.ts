// The libraries people would otherwise install, each driven with its documented defaults, so that the
// benchmark compares like with like: the same cases, the same machine, the same run.
import { createPool } from 'mysql2/promise';
import { Etcd3, EtcdLockFailedError } from 'etcd3';
import { Redis } from 'ioredis';
import RedlockV5 from 'redlock';
import { Redlock as SesameRedlock } from '@sesamecare-oss/redlock';
import { Mutex, RedlockMutex } from 'redis-semaphore';
import type { BenchLock, BenchSubject } from './bench-subject';
import { connectZooKeeper, env, redisUrls } from './bench-env';

/** The lease every peer is given, as ours: long enough never to expire inside a critical section. */
const LEASE_MS = 30_000;

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function connectRedis(urls: readonly string[]): Redis[] {
  return urls.map((url) => new Redis(url));
}

async function quitAll(clients: readonly Redis[]): Promise<void> {
  await Promise.all(clients.map((client) => client.quit()));
}

/**
 * `redlock` v5 and its maintained fork `@sesamecare-oss/redlock`: the same API, `acquire([key], duration)`
 * with their default retry policy (10 retries, 200 ms ± 100 ms apart), which gives up after about two
 * seconds: those give-ups are the `failures` of their rows.
 */
function redlockPeer(flavour: 'redlock' | 'sesame', urls: () => string[]): () => Promise<BenchLock> {
  return async () => {
    const clients = connectRedis(urls());
    // redlock v5 types its clients against ioredis 4; the runtime only calls evalsha/eval on them.
    const redlock = flavour === 'redlock' ? new RedlockV5(clients as unknown as ConstructorParameters<typeof RedlockV5>[0]) : new SesameRedlock(clients);
    redlock.on('error', () => undefined); // a lost vote during contention is reported as an event too
    return {
      async acquire(key) {
        const lock = await redlock.acquire([key], LEASE_MS);
        return async () => {
          await lock.release();
        };
      },
      close: () => quitAll(clients),
    };
  };
}

/** `redis-semaphore`'s Mutex (one server) or RedlockMutex (several), defaults: retry every 10 ms for up to 10 s. */
function redisSemaphorePeer(urls: () => string[]): () => Promise<BenchLock> {
  return async () => {
    const clients = connectRedis(urls());
    return {
      async acquire(key) {
        const mutex = clients.length === 1 ? new Mutex(clients[0], key, { lockTimeout: LEASE_MS }) : new RedlockMutex(clients, key, { lockTimeout: LEASE_MS });
        await mutex.acquire();
        return async () => {
          await mutex.release();
        };
      },
      close: () => quitAll(clients),
    };
  };
}

/**
 * `etcd3`'s own `lock()`: it takes the lock or fails at once (`EtcdLockFailedError`), so callers wrap it
 * in a retry loop; ours retries every 10 ms, which is more eager than most application code.
 */
function etcd3LockPeer(): () => Promise<BenchLock> {
  return async () => {
    const client = new Etcd3({ hosts: env('LOCK_TEST_ETCD').split(',') });
    return {
      async acquire(key, waitMs) {
        const deadline = Date.now() + waitMs;
        for (;;) {
          const lock = client.lock(key).ttl(LEASE_MS / 1000);
          try {
            await lock.acquire();
            return async () => {
              await lock.release();
            };
          } catch (error) {
            if (!(error instanceof EtcdLockFailedError) || Date.now() > deadline) throw error;
            await delay(10);
          }
        }
      },
      close: async () => client.close(),
    };
  };
}

/** MariaDB's named locks: `GET_LOCK(key, seconds)` blocks on the server; the lock belongs to the connection. */
function getLockPeer(): () => Promise<BenchLock> {
  return async () => {
    const pool = createPool({ uri: env('LOCK_TEST_MYSQL_URL'), connectionLimit: 40 });
    return {
      async acquire(key, waitMs) {
        const connection = await pool.getConnection();
        try {
          const [rows] = await connection.query('SELECT GET_LOCK(?, ?) AS got', [key, Math.ceil(waitMs / 1000)]);
          if ((rows as Array<{ got: number | null }>)[0]?.got !== 1) throw new Error(`GET_LOCK(${key}) timed out`);
        } catch (error) {
          connection.release();
          throw error;
        }
        return async () => {
          try {
            await connection.query('SELECT RELEASE_LOCK(?)', [key]);
          } finally {
            connection.release();
          }
        };
      },
      close: () => pool.end(),
    };
  };
}

const EPHEMERAL_SEQUENTIAL = 3;

/**
 * The ZooKeeper lock recipe as the ZooKeeper documentation gives it: create an ephemeral sequential node,
 * list the children, hold if ours is the lowest, otherwise watch the next lower node and list again when
 * it goes. No protection against lost creates, no lease, no fencing: the baseline our strategy builds on.
 */
function textbookZooKeeperPeer(): () => Promise<BenchLock> {
  return async () => {
    const client = await connectZooKeeper('/bench-textbook');
    return {
      async acquire(key, waitMs) {
        const parent = `/bench-textbook/${encodeURIComponent(key)}`;
        await client.create(parent, '', 0).catch(() => undefined);
        const ours = await client.create(`${parent}/lock-`, '', EPHEMERAL_SEQUENTIAL);
        const name = ours.slice(parent.length + 1);
        const deadline = Date.now() + waitMs;
        for (;;) {
          const children = (await client.get_children(parent, false)).sort();
          const index = children.indexOf(name);
          if (index === 0) {
            return async () => {
              await client.delete_(ours, -1);
            };
          }
          if (Date.now() > deadline) {
            await client.delete_(ours, -1);
            throw new Error('timeout');
          }
          const gone = new Promise<void>((resolve) => {
            client
              .w_exists(`${parent}/${children[index - 1]}`, () => resolve())
              .then((stat) => {
                if (!stat) resolve();
              })
              .catch(() => resolve());
          });
          await gone;
        }
      },
      close: async () => client.close(),
    };
  };
}

/** The peers, in report order. */
export const PEER_SUBJECTS: readonly BenchSubject[] = [
  { id: 'peer:redlock@redis', subject: 'redlock', ours: false, backend: 'redis', settings: 'redlock 5 (beta), one server, defaults: 10 retries 200±100 ms apart', crossProcess: true, create: redlockPeer('redlock', () => [env('LOCK_TEST_REDIS_URL')]) },
  { id: 'peer:sesame@redis', subject: '@sesamecare-oss/redlock', ours: false, backend: 'redis', settings: '@sesamecare-oss/redlock, one server, defaults: 10 retries 200±100 ms apart', crossProcess: true, create: redlockPeer('sesame', () => [env('LOCK_TEST_REDIS_URL')]) },
  { id: 'peer:redis-semaphore@redis', subject: 'redis-semaphore', ours: false, backend: 'redis', settings: 'redis-semaphore Mutex, defaults: retry every 10 ms up to 10 s', crossProcess: true, create: redisSemaphorePeer(() => [env('LOCK_TEST_REDIS_URL')]) },
  { id: 'peer:redlock@redis5', subject: 'redlock', ours: false, backend: 'redis5', settings: 'redlock 5 (beta), 5 masters, defaults: 10 retries 200±100 ms apart', crossProcess: true, create: redlockPeer('redlock', redisUrls) },
  { id: 'peer:sesame@redis5', subject: '@sesamecare-oss/redlock', ours: false, backend: 'redis5', settings: '@sesamecare-oss/redlock, 5 masters, defaults: 10 retries 200±100 ms apart', crossProcess: true, create: redlockPeer('sesame', redisUrls) },
  { id: 'peer:redis-semaphore@redis5', subject: 'redis-semaphore', ours: false, backend: 'redis5', settings: 'redis-semaphore RedlockMutex, 5 masters, defaults: retry every 10 ms up to 10 s', crossProcess: true, create: redisSemaphorePeer(redisUrls) },
  { id: 'peer:get-lock@mysql', subject: 'mariadb GET_LOCK', ours: false, backend: 'mysql', settings: 'GET_LOCK / RELEASE_LOCK on a pooled mysql2 connection (blocking on the server)', crossProcess: true, create: getLockPeer() },
  { id: 'peer:etcd3-lock@etcd', subject: 'etcd3', ours: false, backend: 'etcd', settings: "etcd3's lock() (lease + put-if-absent), retried every 10 ms", crossProcess: true, create: etcd3LockPeer() },
  { id: 'peer:textbook@zookeeper', subject: 'zookeeper textbook recipe', ours: false, backend: 'zookeeper', settings: 'ephemeral sequential node, get children, watch the predecessor (node-zookeeper-client)', crossProcess: true, create: textbookZooKeeperPeer() },
];
