// A strategy given `connection` options with `replication` (a master and replicas) opens the pools itself.
// When the server goes away (here: the proxy in front of it cuts every connection and closes each new one
// at once, as a restart does) each call fails with a typed error; once it is back, locks must work again by
// themselves. mysql2's replication cluster drops a member for good after 5 failed connects unless it is
// told to take it offline for a while instead (`restoreNodeTimeout`, 0 by default): before the strategy set
// a default, every later call failed ("Pool does not exist"), for the life of the process.
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import type { DataSourceOptions } from 'typeorm';
import { LockBackendUnavailableError, LockManager, LockService } from '@app/distributed-lock';
import { RowLockStrategy } from '@app/distributed-lock/strategies/database';
import { LatencyProxy } from '../support/latency-proxy';

const run = randomUUID().slice(0, 8);

const servers = [
  { name: 'MariaDB', url: () => process.env.LOCK_TEST_MYSQL_URL as string, type: 'mysql' as const },
  { name: 'PostgreSQL', url: () => process.env.LOCK_TEST_POSTGRES_URL as string, type: 'postgres' as const },
];

describe.each(servers)('a replication set the strategy opened itself, its server gone and back: $name', ({ url, type }) => {
  it('fails each call with a typed error while the server is gone, and locks again once it is back', async () => {
    const target = new URL(url());
    const proxy = new LatencyProxy({ host: target.hostname, port: Number(target.port) }, 0);
    const port = await proxy.start();
    const through = new URL(url());
    through.port = String(port);
    const connection = { type, replication: { master: { url: through.href }, slaves: [{ url: through.href }] }, poolSize: 2 } as DataSourceOptions;
    const manager = new LockManager(new RowLockStrategy({ connection, name: `replication-${type}` }), { operationTimeout: 2_000 });
    const locks = new LockService(manager);
    const key = `replication-recovery:${run}`;
    try {
      await (await locks.acquire(key)).release();
      proxy.down();
      // More failures than mysql2's cluster allows a member before it drops it (5).
      for (let attempt = 0; attempt < 8; attempt += 1) {
        await expect(locks.tryAcquire(key)).rejects.toBeInstanceOf(LockBackendUnavailableError);
      }
      proxy.up();
      const backAt = Date.now();
      let lastError: unknown;
      for (const until = Date.now() + 10_000; Date.now() < until; await new Promise((resolve) => setTimeout(resolve, 100))) {
        try {
          const lock = await locks.tryAcquire(key);
          expect(lock).not.toBeNull();
          await lock?.release();
          lastError = undefined;
          process.stdout.write(`${type} replication set: locked again ${Date.now() - backAt} ms after the server was back\n`);
          break;
        } catch (error) {
          lastError = error;
        }
      }
      expect(lastError).toBeUndefined();
    } finally {
      await manager.close().catch(() => undefined);
      await proxy.close();
    }
  }, 30_000);
});
