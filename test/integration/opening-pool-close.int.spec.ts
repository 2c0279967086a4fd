// A strategy given `connection` options opens its pool at the first lock. Against a server that accepts
// connections and never answers (a frozen host, a black-holed route), that first connect is still under
// way when the application closes, out of the close's reach (TypeORM has not handed the pool over yet):
// it ends at the driver's connect timeout, and the process with it. mysql2 bounds a connect at 10 s by
// default; pg has no bound, so before the strategy set one the connection stayed open for good, and kept
// the process alive after close().
import 'reflect-metadata';
import type { DataSourceOptions } from 'typeorm';
import { LockBackendUnavailableError, LockManager, LockService } from '@app/distributed-lock';
import { AdvisoryLockStrategy } from '@app/distributed-lock/strategies/database';
import { SilentServer } from '../support/silent-server';

/** The drivers' connect timeout (10 s, the strategy's default on PostgreSQL and mysql2's own), with room for a loaded machine. */
const GONE_WITHIN_MS = 14_000;

const servers = [
  { name: 'PostgreSQL', options: (port: number): DataSourceOptions => ({ type: 'postgres', url: `postgres://locks@127.0.0.1:${port}/locks` }) },
  { name: 'MariaDB', options: (port: number): DataSourceOptions => ({ type: 'mysql', url: `mysql://locks@127.0.0.1:${port}/locks` }) },
];

describe.concurrent('a pool still opening against a server that never answers, when the application closes', () => {
  it.each(servers)('$name: its connection is gone within the connect timeout after close()', async ({ options }) => {
    const silent = new SilentServer();
    const port = await silent.start();
    const manager = new LockManager(new AdvisoryLockStrategy({ connection: options(port), name: 'opening-pool' }), { operationTimeout: 500 });
    try {
      await expect(new LockService(manager).tryAcquire('opening-pool')).rejects.toBeInstanceOf(LockBackendUnavailableError);
      expect(silent.openConnections).toBeGreaterThan(0);
      await manager.close().catch(() => undefined);
      const closedAt = Date.now();
      while (silent.openConnections > 0 && Date.now() - closedAt < GONE_WITHIN_MS) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(silent.openConnections, `connections still open ${Date.now() - closedAt} ms after close()`).toBe(0);
      process.stdout.write(`opening pool: connection gone ${Date.now() - closedAt} ms after close()\n`);
    } finally {
      await silent.close();
    }
  }, 30_000);
});
