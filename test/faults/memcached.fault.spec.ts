import { randomUUID } from 'node:crypto';
import { LockLostError, LockManager, LockService } from '@app/distributed-lock';
import { MemcachedLockStrategy } from '@app/distributed-lock/strategies/memcached';
import { faults, startTopology, stopTopology } from '../../scripts/services';
import { abortedWithin } from '../support/aborted-within';
import { contendThroughChaos, expectKilledHolderFreed } from '../support/fault-scenarios';
import { startHolder } from '../support/holder-process';
import { expectCleanHistory, newHistory } from '../support/history/expect-clean-history';
import { recordedWithLock } from '../support/history/recorded-section';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const run = randomUUID().slice(0, 8);

describe('memcached faults: a crashed holder', () => {
  it('a holder killed with SIGKILL frees the lock when its lease (1 s, kept at most 2 s by memcached) ends', async () => {
    await expectKilledHolderFreed('memcached', `fault:${run}:sigkill`, { holderTtlMs: 1_000, busyWaitMs: 1_500, freeWithinMs: 10_000 });
  }, 40_000);
});

describe('memcached faults: the server restarted or killed', () => {
  let server: string;
  const managers: LockManager[] = [];

  const client = (): LockService => {
    const manager = new LockManager(new MemcachedLockStrategy({ connection: server }), { operationTimeout: 1_000 });
    managers.push(manager);
    return new LockService(manager);
  };

  beforeAll(async () => {
    server = (await startTopology('memcached-faults')).value;
  }, 30_000);

  afterAll(async () => {
    await Promise.all(managers.map((manager) => manager.close().catch(() => undefined)));
    await stopTopology('memcached-faults');
  }, 30_000);

  it('a restart frees every lock at once, and each holder is told at its next extension (its signal aborts: extension-refused)', async () => {
    const [member] = faults.members('memcached-faults');
    const history = newHistory('memcached: restarted under two holders');
    const elsewhere = `fault:${run}:restart:process`;
    const here = `fault:${run}:restart:section`;
    // A holder in another process (lease 1.5 s, extended every 500 ms), and a section of this one.
    const holder = await startHolder('memcached', elsewhere, 1_500, { env: { LOCK_TEST_MEMCACHED: server }, historyFile: history.file });
    const locks = client();
    const survivor = client();
    let toldAfter = -1;
    let reason: unknown;
    try {
      const section = recordedWithLock(history, 'section', locks, here, async (lock) => {
        await faults.restart(member);
        const restartedAt = Date.now();
        reason = await abortedWithin(lock.signal, 5_000);
        toldAfter = Date.now() - restartedAt;
        return 'told';
      }, { ttl: 1_500, autoExtend: true });
      // The section ran to its end, and withLock reports the loss.
      await expect(section).rejects.toBeInstanceOf(LockLostError);
      expect(reason).toBeInstanceOf(LockLostError);
      expect((reason as LockLostError).reason).toBe('extension-refused');
      // Told within one watchdog interval (a third of the lease) after the server came back, plus slack.
      expect(toldAfter).toBeGreaterThanOrEqual(0);
      expect(toldAfter).toBeLessThan(500 + 1_000);
      await holder.waitForLine(/^lost extension-refused$/, 1_500);

      // The restart freed both locks: the next owners get them (after the holders were told: the history
      // holds the survivor to that).
      const next = await recordedWithLock(history, 'survivor', survivor, here, () => 'in', { waitTimeout: 1_000 });
      expect(next).toBe('in');
      const other = await survivor.tryAcquire(elsewhere);
      expect(other).not.toBeNull();
      await other?.release();
      expectCleanHistory(history, 'memcached: restarted under two holders');
    } finally {
      holder.child.kill('SIGKILL');
    }
  }, 40_000);

  it('a killed server gives typed errors within the operation timeout, and locks work again once it is back', async () => {
    const [member] = faults.members('memcached-faults');
    const outcome = await contendThroughChaos(
      [0, 1].map(() => new LockManager(new MemcachedLockStrategy({ connection: server }), { operationTimeout: 1_000 })),
      `fault:${run}:killed-server`,
      { contenders: 6, durationMs: 4_000, acquire: { waitTimeout: 2_000 }, scenario: 'memcached: server killed and restarted under 6 contenders' },
      async () => {
        await sleep(1_000);
        await faults.kill(member);
        await sleep(800);
        await faults.restart(member);
      },
    );
    expect(outcome.violations).toBe(0);
    expect(outcome.untyped).toEqual([]);
    expect(outcome.typedFailures).toBeGreaterThan(0);
    expect(outcome.sections).toBeGreaterThan(10);
    const after = client();
    const lock = await after.acquire(`fault:${run}:after-kill`, { waitTimeout: 3_000 });
    expect(lock.isHeld).toBe(true);
    await lock.release();
  }, 40_000);
});
