import 'reflect-metadata';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join, resolve } from 'node:path';
import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  DistributedLockError,
  DistributedLockModule,
  InMemoryLockStrategy,
  InvalidLockKeyError,
  InvalidLockOptionsError,
  LockBackendUnavailableError,
  LockManager,
  LockService,
  Locked,
  MissingPeerDependencyError,
  StrategyNotRegisteredError,
  type AcquireOptions,
  type LockStrategy,
} from '@app/distributed-lock';
import { RedisLockStrategy, RedlockStrategy } from '@app/distributed-lock/strategies/redis';
import { PessimisticLockStrategy, RowLockStrategy } from '@app/distributed-lock/strategies/database';
import { EtcdLockStrategy } from '@app/distributed-lock/strategies/etcd';
import { ZooKeeperLockStrategy } from '@app/distributed-lock/strategies/zookeeper';
import { ZooKeeperSession } from '@app/distributed-lock/strategies/zookeeper/zookeeper-session';
import { MemcachedLockStrategy } from '@app/distributed-lock/strategies/memcached';
import { memcachedLockKey } from '@app/distributed-lock/strategies/memcached/memcached-keys';
import { Etcd3 } from 'etcd3';
import { Redis } from 'ioredis';
import { createConnection } from 'mysql2/promise';
import { closedPort, SilentServer } from '../support/silent-server';
import { memcachedServer, rawMemcached } from '../support/memcached-subject';

const ROOT = resolve(__dirname, '..', '..');
const run = randomUUID().slice(0, 8);
type ErrorClass = abstract new (...args: never[]) => DistributedLockError;

/** Each backend's strategy, aimed at `host:port` (a server that never answers, or nothing at all). */
const AIMED_AT: Record<string, (port: number) => LockStrategy> = {
  redis: (port) => new RedisLockStrategy({ connection: { host: '127.0.0.1', port, lazyConnect: false } }),
  redlock: (port) => new RedlockStrategy({ connections: Array.from({ length: 5 }, () => `redis://127.0.0.1:${port}`) }),
  row: (port) => new RowLockStrategy({ connection: { type: 'mysql', url: `mysql://root:x@127.0.0.1:${port}/db`, connectTimeout: 60_000 } }),
  pessimistic: (port) => new PessimisticLockStrategy({ connection: { type: 'mysql', url: `mysql://root:x@127.0.0.1:${port}/db`, connectTimeout: 60_000 } }),
  zookeeper: (port) => new ZooKeeperLockStrategy({ connect: `127.0.0.1:${port}`, connectTimeout: 60_000 }),
  etcd: (port) => new EtcdLockStrategy({ connection: { hosts: `http://127.0.0.1:${port}` } }),
  memcached: (port) => new MemcachedLockStrategy({ connection: `127.0.0.1:${port}` }),
};

async function expectTyped(action: () => Promise<unknown>, type: ErrorClass, says: RegExp): Promise<DistributedLockError> {
  const error = await action().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(type);
  expect((error as Error).message).toMatch(says);
  return error as DistributedLockError;
}

/**
 * Input that is wrong by itself is refused before any server is touched: every strategy here points at a
 * server that accepts connections and never answers, with a 60 s operation timeout, so an error that
 * arrives at all (within the test's 5 s) arrived without a round trip.
 */
describe('Bad input: refused before any server is touched', () => {
  let silent: SilentServer;
  let managers: Record<string, LockManager>;

  beforeAll(async () => {
    silent = new SilentServer();
    const port = await silent.start();
    managers = Object.fromEntries(Object.entries(AIMED_AT).map(([name, create]) => [name, new LockManager(create(port), { operationTimeout: 60_000 })]));
  });

  afterAll(async () => {
    await Promise.all(Object.values(managers).map((manager) => manager.close().catch(() => undefined)));
    await silent.close();
  });

  const keyCases: Array<[kind: string, key: unknown, says: RegExp]> = [
    ['empty key', '', /must not be empty/],
    ['blank key', '   ', /must not be empty or blank/],
    ['key too long (513 characters)', 'k'.repeat(513), /at most 512.*hash long identifiers/],
    ['key with a newline (log / protocol injection)', 'stock:1\r\nFLUSHALL', /control characters/],
    ['key that is not a string (a number)', 42, /must be a string, got number/],
    ['key that is null', null, /must be a string, got null/],
    ['key that is an object', { id: 1 }, /must be a string, got object/],
  ];
  for (const [kind, key, says] of keyCases) {
    it(`${kind}: InvalidLockKeyError on every strategy`, async () => {
      for (const manager of Object.values(managers)) {
        await expectTyped(() => new LockService(manager).acquire(key as string), InvalidLockKeyError, says);
      }
    });
  }

  it('key longer than the MySQL lock table column (256 characters): InvalidLockKeyError from the row strategies', async () => {
    for (const name of ['row', 'pessimistic']) {
      await expectTyped(() => new LockService(managers[name]).acquire('k'.repeat(256)), InvalidLockKeyError, /at most 255.*hash long identifiers/);
    }
  });

  it('key longer than memcached’s 250 bytes once encoded with the namespace: InvalidLockKeyError from the memcached strategy', async () => {
    const memcached = new LockService(managers.memcached);
    await expectTyped(() => memcached.acquire('k'.repeat(245)), InvalidLockKeyError, /at most 250 bytes.*hash long identifiers/);
    // Short as text, too long once its spaces are escaped (3 bytes each).
    await expectTyped(() => memcached.acquire(`a${' '.repeat(81)}b`), InvalidLockKeyError, /at most 250 bytes/);
  });

  const optionCases: Array<[kind: string, options: Record<string, unknown>, says: RegExp]> = [
    ['ttl not a number (NaN)', { ttl: Number.NaN }, /ttl/],
    ['ttl infinite', { ttl: Number.POSITIVE_INFINITY }, /ttl/],
    ['ttl negative', { ttl: -1 }, /ttl/],
    ['ttl zero', { ttl: 0 }, /ttl/],
    ['waitTimeout negative', { waitTimeout: -5 }, /waitTimeout/],
    ['waitTimeout not a number', { waitTimeout: Number.NaN }, /waitTimeout/],
    ['unknown option (a typo)', { waitTimout: 100 }, /waitTimout.*unknown option.*waitTimeout/],
    ['retry jitter outside 0..1', { retry: { jitter: 2 } }, /jitter/],
    ['unknown mode', { mode: 'upgradable' }, /mode/],
  ];
  for (const [kind, options, says] of optionCases) {
    it(`${kind}: InvalidLockOptionsError naming the option`, async () => {
      for (const manager of Object.values(managers)) {
        await expectTyped(() => new LockService(manager).acquire(`bad:${run}`, options as AcquireOptions), InvalidLockOptionsError, says);
      }
    });
  }

  it('shared (read) lock on a strategy without read locks: InvalidLockOptionsError', async () => {
    for (const name of ['redlock', 'row', 'pessimistic', 'memcached']) {
      await expectTyped(() => new LockService(managers[name]).acquire(`bad:${run}`, { mode: 'shared' }), InvalidLockOptionsError, /does not support shared/);
    }
  });

  it('Redlock lease not far above the node timeout (the lock would expire while being taken): InvalidLockOptionsError', async () => {
    await expectTyped(() => new LockService(managers.redlock).acquire(`bad:${run}`, { ttl: 150 }), InvalidLockOptionsError, /far above the node timeout.*at least 201 ms/);
  });

  it('unknown strategy option (a typo) and impossible settings: InvalidLockOptionsError at construction', () => {
    expect(() => new RedisLockStrategy({ connection: 'redis://127.0.0.1:1', fiar: false } as never)).toThrow(/fiar.*unknown option/);
    expect(() => new RedisLockStrategy({ connection: 'redis://127.0.0.1:1', namespace: 'a{b}' })).toThrow(InvalidLockOptionsError);
    expect(() => new RedlockStrategy({ connections: [] })).toThrow(InvalidLockOptionsError);
    expect(() => new ZooKeeperLockStrategy({ connect: 'localhost' })).toThrow(/host:port/);
    // The client would throw these out of reach (a port out of range) or only at the first lock (a chroot).
    for (const connect of ['127.0.0.1:99999', '127.0.0.1:0', '127.0.0.1:2181/app/', '127.0.0.1:2181/a//b', '127.0.0.1:2181/a/../b']) {
      expect(() => new ZooKeeperLockStrategy({ connect })).toThrow(expect.objectContaining({ name: 'InvalidLockOptionsError', option: 'connect' }));
    }
    expect(() => new ZooKeeperLockStrategy({ connect: 'zk1:2181,zk2:2182/app/locks' })).not.toThrow();
    expect(() => new ZooKeeperLockStrategy({ connect: '127.0.0.1:2181', basePath: 'no-slash' })).toThrow(/absolute znode path/);
    expect(() => new EtcdLockStrategy({ client: new Etcd3({ hosts: 'http://127.0.0.1:1' }), connection: { hosts: 'x' } })).toThrow(/either `client`.*or `connection`/);
    expect(() => new RowLockStrategy({ connection: { type: 'mysql', url: 'mysql://u:p@127.0.0.1:1/db' }, table: 'locks; DROP TABLE x' })).toThrow(/plain SQL identifier/);
    expect(() => new RowLockStrategy({ connection: { type: 'mysql', url: 'mysql://u:p@127.0.0.1:1/db' }, queueTable: 'q-1' })).toThrow(/queueTable.*plain SQL identifier/);
    expect(() => new RowLockStrategy({ connection: { type: 'mysql', url: 'mysql://u:p@127.0.0.1:1/db' }, table: 'locks', queueTable: 'locks' })).toThrow(/queueTable.*must differ from the strategy's other tables/);
    expect(() => new RowLockStrategy({ connection: { type: 'mysql', url: 'mysql://u:p@127.0.0.1:1/db' }, queueTable: 'DISTRIBUTED_LOCK_LEASES' })).toThrow(/queueTable/);
    expect(() => new RowLockStrategy({ connection: { type: 'mysql', url: 'mysql://u:p@127.0.0.1:1/db' }, queueTable: 'distributed_lock_leases_clock' })).toThrow(/queueTable/);
    expect(() => new RowLockStrategy({ connection: { type: 'mysql', url: 'mysql://u:p@127.0.0.1:1/db' }, queueTable: 'distributed_lock_permits' })).toThrow(/queueTable/);
    expect(() => new RowLockStrategy({ connection: { type: 'mysql', url: 'mysql://u:p@127.0.0.1:1/db' }, bargeWindowMs: -1 })).toThrow(/bargeWindowMs/);
    expect(() => new RowLockStrategy({ connection: { type: 'mysql', url: 'mysql://u:p@127.0.0.1:1/db' }, bargeWindowMs: null as never })).toThrow(/bargeWindowMs/);
    expect(() => new LockManager(new InMemoryLockStrategy(), { operationTimeout: -1 })).toThrow(InvalidLockOptionsError);
    expect(() => new MemcachedLockStrategy({ connection: '127.0.0.1:1', fair: false } as never)).toThrow(/fair.*unknown option/);
    expect(() => new MemcachedLockStrategy({ connection: 'localhost' })).toThrow(/host:port/);
    expect(() => new MemcachedLockStrategy({ connection: '127.0.0.1:1', namespace: 'my locks:' })).toThrow(/namespace/);
    expect(() => new MemcachedLockStrategy({ connection: '127.0.0.1:1', localHandover: { windowMs: -1 } })).toThrow(InvalidLockOptionsError);
  });

  it('memcached: a lease memcached would read as a Unix time (above 30 days) is refused before any command', async () => {
    const strategy = new MemcachedLockStrategy({ connection: '127.0.0.1:1' });
    try {
      await expect(strategy.tryAcquire({ key: `bad:${run}`, owner: 'o', ttlMs: 31 * 24 * 3_600_000, mode: 'exclusive' })).rejects.toThrow(/at most .* ms on memcached/);
    } finally {
      await strategy.close();
    }
  });
});

describe('Bad input: key templates of @Locked', () => {
  @Injectable()
  class Shop {
    @Locked('stock:{0}')
    async buy(sku: unknown): Promise<string> {
      return String(sku);
    }

    @Locked('order:{0.customer.id}')
    async order(order: { customer?: { id?: unknown } }): Promise<string> {
      return String(order.customer?.id);
    }

    @Locked('pair:{0}:{1}')
    async pair(a: string, b?: string): Promise<string> {
      return `${a}${b}`;
    }
  }

  let shop: Shop;
  let close: () => Promise<void>;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({ imports: [DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy() } })], providers: [Shop] }).compile();
    await moduleRef.init();
    shop = moduleRef.get(Shop);
    close = () => moduleRef.close();
  });

  afterAll(() => close());

  it.each([
    ['a template argument that is missing (called with one of two)', () => shop.pair('a')],
    ['a key that resolves to undefined', () => shop.buy(undefined)],
    ['a key that resolves to null', () => shop.buy(null)],
    ['a key that resolves to an object', () => shop.buy({ sku: 1 })],
    ['a property path through a missing object', () => shop.order({})],
  ])('%s: InvalidLockKeyError, and the method does not run', async (_kind, call) => {
    await expectTyped(call, InvalidLockKeyError, /\{\d|template|undefined|null|object/);
  });
});

describe('Bad input: unknown strategy names', () => {
  /** Boots a testing module and resolves the error its bootstrap throws (undefined if none). */
  const bootError = (imports: unknown[], providers: Array<new (...args: never[]) => unknown> = []): Promise<unknown> =>
    Test.createTestingModule({ imports: imports as never[], providers })
      .compile()
      .then((moduleRef) => moduleRef.init())
      .then(
        () => undefined,
        (e: unknown) => e,
      );
  const root = (): unknown => DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy(), fast: new InMemoryLockStrategy() } });

  it('forFeature naming a strategy that is not registered: StrategyNotRegisteredError at bootstrap, listing the registered ones', async () => {
    @Module({ imports: [DistributedLockModule.forFeature({ strategy: 'redsi' })] })
    class CatalogModule {}
    const error = await bootError([root(), CatalogModule]);
    expect(error).toBeInstanceOf(StrategyNotRegisteredError);
    expect((error as Error).message).toMatch(/"redsi".*default.*fast/s);
  });

  it('@Locked naming a strategy that is not registered: StrategyNotRegisteredError at bootstrap, naming Class#method', async () => {
    @Injectable()
    class Billing {
      @Locked('invoice:{0}', { strategy: 'etdc' })
      async close(id: string): Promise<string> {
        return id;
      }
    }
    const error = await bootError([root()], [Billing]);
    expect(error).toBeInstanceOf(StrategyNotRegisteredError);
    expect((error as Error).message).toMatch(/"etdc" used by Billing#close is not registered. Registered: "default", "fast"/);
  });
});

describe('Bad input: client package not installed', () => {
  it.each([
    ['ioredis', 'redis'],
    ['etcd3', 'etcd'],
    ['node-zookeeper-client', 'zookeeper'],
    ['typeorm', 'database'],
    ['pg', 'postgres'],
    ['mysql2', 'mysql'],
    ['memcache-client', 'memcached'],
  ])('without %s, the %s strategy says what to install (MissingPeerDependencyError)', (pkg, strategy) => {
    const child = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'test', 'support', 'missing-peer.worker.ts'), pkg, strategy], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    const outcome = JSON.parse(child.stdout) as { name: string; message: string };
    expect(outcome.name).toBe(MissingPeerDependencyError.name);
    expect(outcome.message).toContain(`npm install ${pkg}`);
  }, 70_000);
});

/**
 * A server at fault: each strategy gives up with `LockBackendUnavailableError` within the operation
 * timeout (here 1 s, plus scheduling slack), whether the server hangs, is not there, or refuses the login.
 */
describe('Bad server: typed error within a bounded time', () => {
  const OPERATION_TIMEOUT = 1_000;
  const BOUND = OPERATION_TIMEOUT + 4_000;
  let silent: SilentServer;
  let silentPort: number;
  let nobodyPort: number;

  beforeAll(async () => {
    silent = new SilentServer();
    silentPort = await silent.start();
    nobodyPort = await closedPort();
  });

  afterAll(() => silent.close());

  async function expectUnavailableWithinBound(strategy: LockStrategy, waitTimeout = 500): Promise<void> {
    const manager = new LockManager(strategy, { operationTimeout: OPERATION_TIMEOUT });
    const started = Date.now();
    try {
      await expectTyped(() => new LockService(manager).acquire(`bad:${run}`, { waitTimeout }), LockBackendUnavailableError, /could not .*Check that the server is up/);
      expect(Date.now() - started).toBeLessThan(BOUND);
    } finally {
      await manager.close().catch(() => undefined);
    }
  }

  for (const name of Object.keys(AIMED_AT)) {
    it(`${name}: a server that accepts the connection but never answers`, async () => {
      await expectUnavailableWithinBound(AIMED_AT[name](silentPort));
    }, 20_000);

    it(`${name}: a server that never answers fails within the operation timeout, not after the whole wait (10 s)`, async () => {
      await expectUnavailableWithinBound(AIMED_AT[name](silentPort), 10_000);
    }, 30_000);

    it(`${name}: nothing listening on the port`, async () => {
      await expectUnavailableWithinBound(AIMED_AT[name](nobodyPort));
    }, 20_000);
  }

  it('MariaDB with a wrong password (row and pessimistic): the error carries "Access denied"', async () => {
    const url = new URL(process.env.LOCK_TEST_MYSQL_URL as string);
    url.password = 'wrong-password';
    for (const Strategy of [RowLockStrategy, PessimisticLockStrategy]) {
      const manager = new LockManager(new Strategy({ connection: { type: 'mysql', url: url.toString() } }), { operationTimeout: OPERATION_TIMEOUT });
      try {
        await expectTyped(() => new LockService(manager).acquire(`bad:${run}`), LockBackendUnavailableError, /Access denied/);
      } finally {
        await manager.close().catch(() => undefined);
      }
    }
  }, 20_000);
});

/**
 * Keys reach servers only as data: Lua KEYS/ARGV, bound SQL parameters, encoded znode names and etcd
 * keys. Keys written as attacks are just odd names: the lock works and nothing else is touched.
 */
describe('Injection through keys', () => {
  const ATTACKS = [
    `x'); DROP TABLE distributed_lock_leases; --`,
    `x" ; redis.call('FLUSHALL') --`,
    '../../zookeeper/quota',
    '{tag}a}b',
    'a/b/../c',
    '%2F..%2F',
  ];

  it('Redis: scripts see keys as KEYS, a sentinel key survives', async () => {
    const client = new Redis(process.env.LOCK_TEST_REDIS_URL as string);
    const manager = new LockManager(new RedisLockStrategy({ client }));
    try {
      await client.set(`sentinel:${run}`, 'still here');
      for (const key of ATTACKS) await (await new LockService(manager).acquire(`${run}:${key}`)).release();
      expect(await client.get(`sentinel:${run}`)).toBe('still here');
    } finally {
      await manager.close();
      client.disconnect();
    }
  });

  it('MariaDB: keys are bound parameters, the lock table survives and holds the exact key', async () => {
    const manager = new LockManager(new RowLockStrategy({ connection: { type: 'mysql', url: process.env.LOCK_TEST_MYSQL_URL } }));
    const sql = await createConnection(process.env.LOCK_TEST_MYSQL_URL as string);
    try {
      for (const key of ATTACKS) await (await new LockService(manager).acquire(`${run}:${key}`)).release();
      const [rows] = await sql.query('SELECT lock_key FROM distributed_lock_leases WHERE lock_key = ?', [`${run}:${ATTACKS[0]}`]);
      expect(rows).toHaveLength(1);
    } finally {
      await manager.close();
      await sql.end();
    }
  });

  it('ZooKeeper: every key is one node directly under the base path, never a path of its own', async () => {
    const manager = new LockManager(new ZooKeeperLockStrategy({ connect: process.env.LOCK_TEST_ZOOKEEPER as string, basePath: `/inject-${run}` }));
    const session = new ZooKeeperSession({ connect: process.env.LOCK_TEST_ZOOKEEPER as string }, 'inject-reader', 10_000);
    try {
      const locks = new LockService(manager);
      const held = await Promise.all(ATTACKS.map((key) => locks.acquire(key)));
      const client = await session.client();
      const children = await client.get_children(`/inject-${run}`, false);
      expect(children).toHaveLength(ATTACKS.length);
      expect(await client.exists('/zookeeper/quota/_c_', false).catch(() => null)).toBeFalsy();
      await Promise.all(held.map((lock) => lock.release()));
    } finally {
      await session.close();
      await manager.close();
    }
  });

  it('memcached: keys are escaped for the text protocol, so a key never ends a command early or adds one', async () => {
    const raw = rawMemcached();
    const manager = new LockManager(new MemcachedLockStrategy({ connection: memcachedServer() }));
    try {
      await raw.set(`sentinel:${run}`, 'still here', { lifetime: 60 });
      // Control characters are refused by every strategy; spaces and "%" reach memcached escaped.
      const attacks = [...ATTACKS, 'k 0 0 1 noreply', `sentinel:${run} x`, '%20'];
      for (const key of attacks) await (await new LockService(manager).acquire(`${run}:${key}`)).release();
      expect(await raw.get(`sentinel:${run}`)).toMatchObject({ value: 'still here' });
      const held = await new LockService(manager).acquire(`${run}:a b`);
      expect(await raw.get(memcachedLockKey('dlock:', `${run}:a b`))).toMatchObject({ value: held.owner });
      await held.release();
    } finally {
      await manager.close();
      raw.shutdown();
    }
  });

  it('etcd: a key that is a prefix of another ("a" and "a/b") is still a lock of its own', async () => {
    const manager = new LockManager(new EtcdLockStrategy({ connection: { hosts: (process.env.LOCK_TEST_ETCD as string).split(',') } }));
    try {
      const locks = new LockService(manager);
      const parent = await locks.acquire(`${run}/a`);
      const child = await locks.tryAcquire(`${run}/a/b`);
      const sibling = await locks.tryAcquire(`${run}/a%2Fb`);
      expect(child?.isHeld).toBe(true);
      expect(sibling?.isHeld).toBe(true);
      await Promise.all([parent.release(), child?.release(), sibling?.release()]);
    } finally {
      await manager.close();
    }
  });
});
