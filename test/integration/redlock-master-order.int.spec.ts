import { randomUUID } from 'node:crypto';
import { LockAcquireTimeoutError, LockManager, LockService } from '@app/distributed-lock';
import { RedlockStrategy } from '@app/distributed-lock/strategies/redis';

const run = randomUUID().slice(0, 8);
const urls = (): string[] => (process.env.LOCK_TEST_REDIS_URLS as string).split(',');

/**
 * The first master stores its key as a hash (it keeps the line), the others as a string. Two instances
 * that list the same three masters in another order (a config change rolled out one instance at a time)
 * each write the other kind of value where the other expects its own.
 */
describe('Redlock: instances that list the masters in different orders', () => {
  const managers: LockManager[] = [];
  const instance = (connections: string[]): LockService => {
    const manager = new LockManager(new RedlockStrategy({ connections }));
    managers.push(manager);
    return new LockService(manager);
  };

  afterAll(async () => {
    await Promise.all(managers.map((manager) => manager.close()));
  });

  it('a busy key is reported busy (tryAcquire null, acquire times out), not as masters that did not answer', async () => {
    const key = `order:${run}`;
    const [a, b, c] = urls();
    const holderSide = instance([a, b, c]);
    const otherSide = instance([b, a, c]);
    const holder = await holderSide.acquire(key);
    try {
      // Every master is up and answers; the lock is simply held.
      const tried = await otherSide.tryAcquire(key).then(
        (lock) => (lock === null ? 'null' : 'a lock'),
        (error: unknown) => `${(error as Error).name}: ${(error as Error).message}`,
      );
      expect(tried).toBe('null');
      const waited = await otherSide.acquire(key, { waitTimeout: 500 }).catch((error: unknown) => error);
      expect((waited as Error).name).toBe(LockAcquireTimeoutError.name);
    } finally {
      await holder.release();
    }
  }, 20_000);
});
