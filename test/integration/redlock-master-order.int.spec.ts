import { randomUUID } from 'node:crypto';
import { LockAcquireTimeoutError, LockManager, LockService } from '@app/distributed-lock';
import { RedlockStrategy } from '@app/distributed-lock/strategies/redis';

const run = randomUUID().slice(0, 8);
const urls = (): string[] => (process.env.LOCK_TEST_REDIS_URLS as string).split(',');

/** How many wait in `key`'s line, once someone does (bounded: 0 after 5 s). */
async function pendingOnceQueued(locks: LockService, key: string): Promise<number | undefined> {
  const until = Date.now() + 5_000;
  for (;;) {
    const pending = (await locks.query(key)).pending;
    if ((pending?.length ?? 0) > 0 || Date.now() > until) return pending?.length;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

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

  it('query from an instance whose first master is another: the holder, and no line it cannot see (pending null)', async () => {
    const key = `order-query:${run}`;
    const holderSide = instance(urls());
    const waiterSide = instance(urls());
    const reversed = instance([...urls()].reverse());
    const holder = await holderSide.acquire(key, { ttl: 5_000 });
    const waiting = waiterSide.acquire(key, { ttl: 5_000, waitTimeout: 5_000 });
    try {
      // In line once its first round was refused: a fixed 100 ms was not always enough on a loaded machine.
      expect(await pendingOnceQueued(holderSide, key)).toBe(1);
      const seen = await reversed.query(key);
      expect(seen.held.map((held) => held.owner.id)).toEqual([holder.owner]);
      // Its first master keeps no line for this key (the holder's instance keeps it elsewhere): not "nobody waits".
      expect(seen.pending).toBeNull();
    } finally {
      await holder.release();
      await (await waiting).release();
    }
  }, 20_000);
});
