import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { LockManager, LockService } from '@app/distributed-lock';
import { RedisLockStrategy } from '@app/distributed-lock/strategies/redis';

const run = promisify(execFile);

/** docs/operations.md's shell look (examples/who-holds.ts): run as an operator would, against a real Redis. */
describe('examples/who-holds.ts', () => {
  it('prints each held key under the prefix with its holder, token and waiters, and nothing outside it', async () => {
    const url = process.env.LOCK_TEST_REDIS_URL;
    if (!url) throw new Error('LOCK_TEST_REDIS_URL is not set: run through npm test');
    const stem = `who-holds:${randomUUID().slice(0, 8)}:`;
    const holderManager = new LockManager(new RedisLockStrategy({ connection: url }), { instanceName: 'shop-1' });
    const waiterManager = new LockManager(new RedisLockStrategy({ connection: url }), { instanceName: 'shop-2' });
    const locks = new LockService(holderManager, { keyPrefix: 'shop:' });
    const held = await locks.acquire(`${stem}stock`, { ttl: 30_000 });
    const outside = await locks.acquire(`${stem.slice(0, -1)}-other`, { ttl: 30_000 });
    const waiting = new LockService(waiterManager, { keyPrefix: 'shop:' }).acquire(`${stem}stock`, { waitTimeout: 20_000 });
    try {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const { stdout } = await run(process.execPath, ['-r', '@swc-node/register', 'examples/who-holds.ts', '--redis', url, '--key-prefix', 'shop:', '--prefix', stem], { timeout: 30_000 });
      const lines = stdout.trim().split('\n');
      expect(lines).toHaveLength(2);
      expect(lines[0]).toMatch(new RegExp(`^${stem}stock\\theld by shop-1/${process.pid} token ${held.fencingToken} \\d+ ms left\\t1 waiting: shop-2/${process.pid}$`));
      expect(lines[1]).toBe(`1 key(s) held under "shop:${stem}"`);
    } finally {
      await held.release();
      await outside.release();
      await (await waiting).release();
      await Promise.all([holderManager.close(), waiterManager.close()]);
    }
  }, 40_000);
});
