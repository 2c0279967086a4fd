import { DistributedLockError, LockAcquireTimeoutError, LockManager, LockService, type AcquireOptions } from '@app/distributed-lock';
import { subjectNamed } from '../contract/subjects';
import { startHolder } from './holder-process';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A separate process holds `key` (watchdog running), is killed with SIGKILL, and the lock must come free
 * by the backend's own means (lease, session, connection) within `freeWithinMs`, with a higher fencing
 * token where the strategy has them.
 */
export async function expectKilledHolderFreed(subject: string, key: string, options: { holderTtlMs: number; busyWaitMs: number; freeWithinMs: number }): Promise<void> {
  const holder = await startHolder(subject, key, options.holderTtlMs);
  const manager = new LockManager(await subjectNamed(subject).create());
  const locks = new LockService(manager);
  try {
    // While the holder lives, nobody else gets in.
    await expect(locks.acquire(key, { waitTimeout: options.busyWaitMs })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
    holder.child.kill('SIGKILL');
    await holder.exited;
    const killedAt = Date.now();
    const lock = await locks.acquire(key, { waitTimeout: options.freeWithinMs + 5_000 });
    expect(Date.now() - killedAt).toBeLessThan(options.freeWithinMs);
    if (holder.fencingToken !== undefined) expect(lock.fencingToken).toBeGreaterThan(holder.fencingToken);
    await lock.release();
  } finally {
    holder.child.kill('SIGKILL');
    await manager.close();
  }
}

/** What contenders saw while servers were being killed. */
export interface ChaosOutcome {
  readonly sections: number;
  readonly violations: number;
  readonly typedFailures: number;
  readonly untyped: unknown[];
  readonly lost: number;
}

/**
 * `contenders` loops (spread over `services`) take `key` until `durationMs` passes, each section
 * checking that nobody else is inside, while `chaos` kills and restarts servers. Failures must be typed
 * library errors; they are counted, and the loops go on. Bounded by `durationMs`.
 */
export async function contendThroughChaos(
  managers: readonly LockManager[],
  key: string,
  options: { contenders: number; durationMs: number; acquire: AcquireOptions },
  chaos: () => Promise<void>,
): Promise<ChaosOutcome> {
  const services = managers.map((manager) => new LockService(manager));
  let lost = 0;
  for (const manager of managers) manager.events.on('lost', () => (lost += 1));
  let inside = 0;
  let violations = 0;
  let sections = 0;
  let typedFailures = 0;
  const untyped: unknown[] = [];
  const stopAt = Date.now() + options.durationMs;
  const loops = Array.from({ length: options.contenders }, async (_, i) => {
    const locks = services[i % services.length];
    while (Date.now() < stopAt) {
      try {
        await locks.withLock(key, async () => {
          inside += 1;
          if (inside > 1) violations += 1;
          await sleep(5);
          inside -= 1;
          sections += 1;
        }, options.acquire);
      } catch (error) {
        if (error instanceof DistributedLockError) typedFailures += 1;
        else untyped.push(error);
        await sleep(50);
      }
    }
  });
  await Promise.all([...loops, chaos()]);
  await Promise.all(managers.map((manager) => manager.close().catch(() => undefined)));
  return { sections, violations, typedFailures, untyped, lost };
}
