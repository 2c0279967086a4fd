import { randomUUID } from 'node:crypto';
import { LockLostError, LockManager, LockService } from '@app/distributed-lock';
import { MemcachedLockStrategy } from '@app/distributed-lock/strategies/memcached';
import { faults, startTopology, stopTopology } from '../../scripts/services';
import { abortedWithin } from '../support/aborted-within';
import { MemcachedClock, monotonicSeconds, untilMonotonic } from '../support/memcached-clock';
import { contendThroughChaos, expectKilledHolderFreed } from '../support/fault-scenarios';
import { startHolder } from '../support/holder-process';
import { expectCleanHistory, newHistory } from '../support/history/expect-clean-history';
import { recordedWithLock } from '../support/history/recorded-section';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const run = randomUUID().slice(0, 8);

describe('memcached faults: a crashed holder', () => {
  it('a holder killed with SIGKILL frees the lock when its lease (1 s, kept at most 3 s by memcached) ends', async () => {
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

  /**
   * memcached moves its clock once a second, by a timer it sets one second after its last tick, so its ticks
   * drift across the second; the tick that passes a second boundary late (memcached's main thread was busy for
   * a moment, or the drift alone) moves the clock by two seconds at once. An item stored in the second before
   * it had its expiry counted from a clock almost two seconds behind: sent as ⌈ttl⌉ + 1 s, a 1 s lease ended
   * early, and a contender took the lock while its holder's lease had half a second to run. The drift alone
   * brings such a tick about every 16 minutes here (bench/results/memcached-clock-drift.md): the contract's
   * 1 s watchdog lease was lost to one in full runs (`extension-refused`). Here a pause of 200 ms makes that
   * tick come late on purpose.
   */
  it('keeps a lease on the server until its holder’s lease ends when memcached’s clock moves two seconds at one tick', async () => {
    const [member] = faults.members('memcached-faults');
    const [host, port] = [server.slice(0, server.lastIndexOf(':')), Number(server.slice(server.lastIndexOf(':') + 1))];
    const clock = new MemcachedClock(host, port);
    const locks = client();
    const contender = client();
    try {
      // Both connected before the timed part begins.
      await (await locks.acquire(`fault:${run}:clock-jump:warm`)).release();
      await (await contender.tryAcquire(`fault:${run}:clock-jump:warm`))?.release();
      for (let round = 0; ; round += 1) {
        // Ticks late in the second (at .90): the server stands still until then, and its overdue tick comes at
        // once; the next one a second later.
        const seen = await clock.nextTick();
        let shiftTo = Math.floor(seen.at + 1) + 0.9;
        if (shiftTo < seen.at + 1.05) shiftTo += 1;
        faults.pause(member);
        await untilMonotonic(shiftTo);
        faults.resume(member);
        const tick = await clock.nextTick();
        const second = Math.floor(tick.at);
        // A 1 s lease granted at .75, before the tick due at .90; that tick is held past the next second.
        await untilMonotonic(second + 1.75);
        const k = `fault:${run}:clock-jump:${round}`;
        const lock = await locks.acquire(k, { ttl: 1_000 });
        const grantedInTime = monotonicSeconds() < second + 1.85;
        // The clock as it stood before the stop: the held tick runs as the server resumes, which may be before
        // a read sent after the resume reaches it (seen in CI: two rounds missed so).
        let beforeStop: number | undefined;
        if (grantedInTime) {
          await untilMonotonic(second + 1.85);
          beforeStop = await clock.seconds();
          faults.pause(member);
          await untilMonotonic(second + 2.05);
          faults.resume(member);
        }
        const late = grantedInTime ? await clock.nextTick(3_000, beforeStop) : undefined;
        if (late?.moved === 2) {
          // The holder's lease has about 0.5 s to run: nobody else may take the lock before it ends.
          const taken = await contender.tryAcquire(k);
          const answeredWithinLease = Date.now() < lock.expiresAt;
          await taken?.release();
          expect(answeredWithinLease).toBe(true);
          // Not the handle itself: printing it for a failure would send the strategy's own calls.
          expect(taken === null ? 'refused' : 'granted to the contender').toBe('refused');
          await lock.release();
          return;
        }
        // The premise did not happen (a loaded machine missed the window): once more, saying what was seen.
        process.stdout.write(`memcached clock round ${round} missed: ticks ${seen.at.toFixed(3)}, ${tick.at.toFixed(3)} (moved ${tick.moved}), granted in time ${grantedInTime}, held tick ${late ? `${late.at.toFixed(3)} moved ${late.moved}` : 'none'}\n`);
        await lock.release();
        if (round >= 4) throw new Error('memcached’s clock never moved two seconds at the held tick in 5 rounds');
      }
    } finally {
      faults.resume(member);
      clock.close();
    }
  }, 40_000);

  /**
   * A memcached that stops handles the commands that waited before its overdue clock tick, so an extension
   * sent during the stop is counted from a clock behind by about the stop, and its item can end soon after the
   * server resumes (bench/results/memcached-pause.md). A holder whose watchdog renews must hear of it first:
   * each renewal is bounded by the lease it renews, so a stop longer than the lease ends the holder's lease
   * (and tells it) before the contender, polling as soon as the server is back, can take the lock.
   */
  it('tells a renewing holder it lost its lock before anyone else gets it when memcached stops for longer than the lease', async () => {
    const [member] = faults.members('memcached-faults');
    const holder = client();
    const contender = client();
    try {
      await (await contender.acquire(`fault:${run}:stop:warm`)).release();
      for (let round = 0; round < 3; round += 1) {
        const k = `fault:${run}:stop:${round}`;
        const lock = await holder.acquire(k, { ttl: 1_000, autoExtend: true });
        let toldAt = 0;
        lock.signal.addEventListener('abort', () => (toldAt = Date.now()));
        // A renewal is on its way at some point of the stop (they go every third of the lease).
        await sleep(100 + Math.random() * 300);
        faults.pause(member);
        await sleep(2_500);
        faults.resume(member);
        let grantedAt = 0;
        const giveUpAt = Date.now() + 5_000;
        while (!grantedAt && Date.now() < giveUpAt) {
          const taken = await contender.tryAcquire(k, { ttl: 1_000, autoExtend: false }).catch(() => null);
          if (taken) {
            grantedAt = Date.now();
            await taken.release();
          } else await sleep(5);
        }
        // The holder's lease could not outlast the stop: it was told, and before the contender got in.
        expect(toldAt).toBeGreaterThan(0);
        expect(grantedAt).toBeGreaterThan(0);
        expect(toldAt).toBeLessThanOrEqual(grantedAt);
        expect(await lock.release().catch(() => false)).toBe(false);
      }
    } finally {
      faults.resume(member);
    }
  }, 60_000);

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
