import { randomUUID } from 'node:crypto';
import { inspect } from 'node:util';
import { Logger } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { DataSource } from 'typeorm';
import { DistributedLockModule, LockPermissionDeniedError, LockRegistry, LockService, type LockStrategy } from '@app/distributed-lock';
import { RowLockStrategy } from '@app/distributed-lock/strategies/database';
import { RedisLockStrategy } from '@app/distributed-lock/strategies/redis';
import { redisAclRules } from '../../libs/distributed-lock/src/strategies/redis/redis-acl';
import { lockTableGrants, MARIADB_TLS, REDIS_TLS, startTopology, stopTopology, type RunningTopology } from '../../scripts/services';
import { ensureSecurePackages, mariadbTlsOptions, redisTlsOptions } from '../support/secure-servers';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const EVENTS = ['acquired', 'released', 'extended', 'lost', 'timeout', 'backgroundError'] as const;
const LOG_METHODS = ['log', 'error', 'warn', 'debug', 'verbose', 'fatal'] as const;
const CONSOLE_METHODS = ['log', 'error', 'warn', 'info', 'debug'] as const;

/** Everything that left the library: errors (printed in full, causes and hidden properties included), events and log lines. */
class Outputs {
  readonly texts: string[] = [];

  constructor() {
    for (const method of LOG_METHODS) {
      vi.spyOn(Logger.prototype, method).mockImplementation((...args: unknown[]) => void this.add('log', args));
    }
    for (const method of CONSOLE_METHODS) {
      vi.spyOn(console, method).mockImplementation((...args: unknown[]) => void this.add('console', args));
    }
  }

  add(kind: string, value: unknown): void {
    this.texts.push(`${kind}: ${inspect(value, { depth: Infinity, showHidden: true, breakLength: Infinity })}`);
    if (value instanceof Error) this.texts.push(`${kind}: ${String(value)} ${value.stack ?? ''}`);
  }

  watch(registry: LockRegistry): void {
    const events = registry.manager().events;
    for (const name of EVENTS) events.on(name, (event: unknown) => this.add(`event ${name}`, event));
  }

  /** The outputs that show `secret`; [] when none does. */
  showing(secret: string): string[] {
    return this.texts.filter((text) => text.includes(secret));
  }
}

/** The Nest module over one strategy, with logEvents on (the default) and a watchdog that extends every 300 ms. */
async function appWith(strategy: LockStrategy): Promise<TestingModule> {
  const app = await Test.createTestingModule({
    imports: [DistributedLockModule.forRoot({ strategies: { default: strategy }, operationTimeout: 1_500, defaults: { ttl: 900, autoExtend: true } })],
  }).compile();
  await app.init();
  return app;
}

/**
 * Holds a lock, then lets `cutOff` change the password on the server and drop the connections, so that
 * the library reconnects with the known password in the background, until the lock is reported lost.
 * Then a new acquisition fails too. Returns its error.
 */
async function loseToChangedPassword(app: TestingModule, outputs: Outputs, cutOff: () => Promise<void>): Promise<unknown> {
  const locks = app.get(LockService);
  const lock = await locks.acquire(`leak:${randomUUID()}`);
  await cutOff();
  for (let waited = 0; lock.isHeld && waited < 15_000; waited += 100) await sleep(100);
  expect(lock.isHeld).toBe(false);
  const error = await locks.acquire(`leak:${randomUUID()}`, { waitTimeout: 500 }).catch((e: unknown) => e);
  outputs.add('error', error);
  return error;
}

beforeAll(() => ensureSecurePackages(), 300_000);
afterEach(() => vi.restoreAllMocks());

describe('secrets never leak: Redis', () => {
  let topology: RunningTopology;
  let operator: Redis;
  const secret = `redis-secret-${randomUUID()}`;

  beforeAll(async () => {
    topology = await startTopology('redis-tls');
    operator = new Redis({ ...redisTlsOptions(REDIS_TLS.users.admin.name, REDIS_TLS.users.admin.password), maxRetriesPerRequest: 1 });
  }, 60_000);

  afterAll(async () => {
    operator?.disconnect();
    if (topology?.managed) await stopTopology('redis-tls');
  }, 30_000);

  it('a wrong password: the acquire error, its causes, the events and the logs never show it', async () => {
    const outputs = new Outputs();
    const app = await appWith(new RedisLockStrategy({ connection: { ...redisTlsOptions(REDIS_TLS.users.app.name, secret), maxRetriesPerRequest: 0 } }));
    outputs.watch(app.get(LockRegistry));
    try {
      const error = await app.get(LockService).acquire(`leak:${randomUUID()}`, { waitTimeout: 500 }).catch((e: unknown) => e);
      outputs.add('error', error);
      expect(error).toBeInstanceOf(LockPermissionDeniedError);
      expect(inspect(error, { depth: Infinity })).toMatch(/WRONGPASS/);
    } finally {
      await app.close();
    }
    expect(outputs.showing(secret)).toEqual([]);
  });

  it('a password changed under a held lock: background errors, the lost event and their log lines never show it', async () => {
    const user = `leak-${randomUUID().slice(0, 8)}`;
    await operator.call('ACL', 'SETUSER', user, 'reset', 'on', `>${secret}`, ...redisAclRules(REDIS_TLS.namespace).split(' '));
    const outputs = new Outputs();
    const app = await appWith(new RedisLockStrategy({ connection: redisTlsOptions(user, secret) }));
    outputs.watch(app.get(LockRegistry));
    try {
      await loseToChangedPassword(app, outputs, async () => {
        await operator.call('ACL', 'SETUSER', user, 'resetpass', `>${secret}-changed`);
        await operator.call('CLIENT', 'KILL', 'USER', user);
      });
    } finally {
      await app.close();
    }
    expect(outputs.texts.some((text) => text.startsWith('event lost'))).toBe(true);
    expect(outputs.showing(secret)).toEqual([]);
  }, 30_000);
});

describe('secrets never leak: MariaDB', () => {
  let topology: RunningTopology;
  let root: DataSource;
  const secret = `mariadb-secret-${randomUUID()}`;

  beforeAll(async () => {
    topology = await startTopology('mariadb-tls');
    root = new DataSource(mariadbTlsOptions(MARIADB_TLS.users.root.name, MARIADB_TLS.users.root.password));
    await root.initialize();
  }, 60_000);

  afterAll(async () => {
    await root?.destroy();
    if (topology?.managed) await stopTopology('mariadb-tls');
  }, 30_000);

  it('a wrong password: the acquire error, its causes, the events and the logs never show it', async () => {
    const outputs = new Outputs();
    const app = await appWith(new RowLockStrategy({ connection: mariadbTlsOptions(MARIADB_TLS.users.app.name, secret) }));
    outputs.watch(app.get(LockRegistry));
    try {
      const error = await app.get(LockService).acquire(`leak:${randomUUID()}`, { waitTimeout: 500 }).catch((e: unknown) => e);
      outputs.add('error', error);
      expect(inspect(error, { depth: Infinity })).toMatch(/Access denied/);
    } finally {
      await app.close();
    }
    expect(outputs.showing(secret)).toEqual([]);
  });

  it('a password changed under a held lock: background errors, the lost event and their log lines never show it', async () => {
    const user = `leak_${randomUUID().slice(0, 8)}`;
    const account = `'${user}'@'127.0.0.1'`;
    await root.query(`CREATE USER ${account} IDENTIFIED BY '${secret}' REQUIRE SSL`);
    for (const grant of lockTableGrants(MARIADB_TLS.database, account)) await root.query(grant);
    const outputs = new Outputs();
    const app = await appWith(new RowLockStrategy({ connection: mariadbTlsOptions(user, secret) }));
    outputs.watch(app.get(LockRegistry));
    try {
      await loseToChangedPassword(app, outputs, async () => {
        await root.query(`ALTER USER ${account} IDENTIFIED BY '${secret}-changed'`);
        const sessions = (await root.query('SELECT ID AS id FROM information_schema.PROCESSLIST WHERE USER = ?', [user])) as Array<{ id: number }>;
        for (const { id } of sessions) await root.query(`KILL ${Number(id)}`);
      });
    } finally {
      await app.close();
      await root.query(`DROP USER ${account}`);
    }
    expect(outputs.texts.some((text) => text.startsWith('event lost'))).toBe(true);
    expect(outputs.showing(secret)).toEqual([]);
  }, 30_000);
});
