// A COMMIT of a section's writes that reached the server, whose reply a cut connection lost: the server may
// have committed, so the caller must hear that the outcome is unknown (LockCommitFailedError, committed
// 'unknown'), never that the writes are gone. The review of stop 58 found the advisory lock of transaction
// scope reporting such a COMMIT as the lock lost with its session ('session-ended', whose writes are gone)
// after a change for sections whose own statement fails with their session.
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { LockCommitFailedError, LockManager, LockService, type LockStrategy } from '@app/distributed-lock';
import { AdvisoryLockStrategy, lockTransaction, PessimisticLockStrategy } from '@app/distributed-lock/strategies/database';
import { HeldBackProxy } from '../support/held-back-proxy';

const run = randomUUID().slice(0, 8);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

type Server = 'postgres' | 'mysql';
const urlOf = (server: Server): URL => new URL((server === 'postgres' ? process.env.LOCK_TEST_POSTGRES_URL : process.env.LOCK_TEST_MYSQL_URL) as string);

describe('a COMMIT whose reply a cut connection lost', () => {
  it.each([
    ['advisory PostgreSQL, transaction scope', 'postgres', (url: string): LockStrategy => new AdvisoryLockStrategy({ connection: { type: 'postgres', url, poolSize: 3 }, name: 'commit-cut-a', scope: 'transaction' })],
    ['advisory MariaDB, transaction scope', 'mysql', (url: string): LockStrategy => new AdvisoryLockStrategy({ connection: { type: 'mysql', url, poolSize: 3 }, name: 'commit-cut-a', scope: 'transaction' })],
    ['pessimistic PostgreSQL', 'postgres', (url: string): LockStrategy => new PessimisticLockStrategy({ connection: { type: 'postgres', url, poolSize: 3 }, name: 'commit-cut-p' })],
    ['pessimistic MariaDB', 'mysql', (url: string): LockStrategy => new PessimisticLockStrategy({ connection: { type: 'mysql', url, poolSize: 3 }, name: 'commit-cut-p' })],
  ] as const)('%s: rejects with LockCommitFailedError (committed: unknown), and the server did commit', async (label, server, make) => {
    const direct = urlOf(server);
    const proxy = new HeldBackProxy({ host: direct.hostname, port: Number(direct.port) });
    const viaProxy = new URL(direct.toString());
    viaProxy.port = String(await proxy.start());
    const admin = new DataSource({ type: server, url: direct.toString() } as ConstructorParameters<typeof DataSource>[0]);
    await admin.initialize();
    const table = `commit_cut_${run}_${server === 'postgres' ? 'pg' : 'my'}`;
    const id = `${label}:${randomUUID().slice(0, 8)}`;
    const parameter = server === 'postgres' ? '$1' : '?';
    const manager = new LockManager(make(viaProxy.toString()), { operationTimeout: 5_000 });
    try {
      await admin.query(`CREATE TABLE IF NOT EXISTS ${table} (id VARCHAR(120) PRIMARY KEY)`);
      const outcome = new LockService(manager)
        .withLock(
          `commit-cut:${run}:${label}`,
          async (lock) => {
            await lockTransaction(lock).query(`INSERT INTO ${table} (id) VALUES (${parameter})`, [id]);
            // From here on the server's replies wait in the proxy: the COMMIT goes out, its answer does not come back.
            proxy.holdBack();
          },
          { ttl: 30_000 },
        )
        .then(() => 'resolved', (error: unknown) => error);
      const committed = async (): Promise<boolean> => ((await admin.query(`SELECT id FROM ${table} WHERE id = ${parameter}`, [id])) as unknown[]).length === 1;
      for (const started = Date.now(); !(await committed()); await sleep(5)) {
        if (Date.now() - started > 5_000) throw new Error('the COMMIT never reached the server');
      }
      proxy.cut();
      proxy.letThrough();
      const error = await outcome;
      expect(error).toBeInstanceOf(LockCommitFailedError);
      expect((error as LockCommitFailedError).committed).toBe('unknown');
    } finally {
      proxy.letThrough();
      await manager.close();
      await admin.query(`DROP TABLE IF EXISTS ${table}`).catch(() => undefined);
      await admin.destroy();
      await proxy.close();
    }
  }, 30_000);
});
