import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { LockManager, LockService } from '@app/distributed-lock';
import { RowLockStrategy } from '@app/distributed-lock/strategies/database';
import { initializeDataSource } from '../support/initialize-data-source';

const run = randomUUID().slice(0, 8);
const DATABASES: ReadonlyArray<{ readonly name: string; readonly options: () => DataSourceOptions }> = [
  { name: 'MariaDB', options: () => ({ type: 'mysql', url: process.env.LOCK_TEST_MYSQL_URL, poolSize: 8 }) },
  { name: 'PostgreSQL', options: () => ({ type: 'postgres', url: process.env.LOCK_TEST_POSTGRES_URL, poolSize: 8 }) },
];
const INSTANCES = 6;
const WORKERS_PER_INSTANCE = 4;
const KEYS = 10;
const RUN_MS = 6_000;

/**
 * The lock table's queue of waiters under contention on several keys at once, each contender its own app
 * instance. Found by an adversarial run on MariaDB (REPEATABLE READ): the queue's writes deadlocked with each
 * other and with the take-over, whose subquery share-locks the queue rows it reads; acquire() then rejected
 * with "Deadlock found" (9 to 26 times in 15 s), and a leave rolled back left its waiter's place behind, live
 * and oldest, holding every other waiter back for its lease (2 s).
 */
describe.each(DATABASES)('the lock table queue under contention on many keys: $name', ({ options }) => {
  let admin: DataSource;

  beforeAll(async () => {
    admin = await initializeDataSource(options());
  });

  afterAll(async () => {
    await admin?.destroy();
  });

  it(`${INSTANCES} instances × ${WORKERS_PER_INSTANCE} workers on ${KEYS} keys: no failed acquisition, and no place left behind`, async () => {
    const keys = Array.from({ length: KEYS }, (_, i) => `queue:${run}:${i}`);
    const managers = Array.from({ length: INSTANCES }, () => new LockManager(new RowLockStrategy({ connection: options(), localHandover: false })));
    const failures: string[] = [];
    let sections = 0;
    try {
      const services = managers.map((manager) => new LockService(manager));
      const endAt = Date.now() + RUN_MS;
      await Promise.all(
        services.flatMap((service, instance) =>
          Array.from({ length: WORKERS_PER_INSTANCE }, async (_, worker) => {
            for (let i = 0; Date.now() < endAt; i += 1) {
              const key = keys[(instance * 7 + worker * 3 + i) % KEYS];
              try {
                await service.withLock(key, () => new Promise<void>((resolve) => setTimeout(resolve, i % 2)), { waitTimeout: 30_000 });
                sections += 1;
              } catch (error) {
                failures.push(`${(error as Error).name}: ${(error as Error).message}`);
              }
            }
          }),
        ),
      );
    } finally {
      await Promise.all(managers.map((manager) => manager.close()));
    }
    expect(failures).toEqual([]);
    expect(sections).toBeGreaterThan(0);
    const left = (await admin.query(admin.options.type === 'postgres' ? 'SELECT lock_key FROM distributed_lock_queue WHERE lock_key LIKE $1' : 'SELECT lock_key FROM distributed_lock_queue WHERE lock_key LIKE ?', [
      `queue:${run}:%`,
    ])) as unknown[];
    expect(left).toEqual([]);
  }, 60_000);
});
