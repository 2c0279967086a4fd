import { Logger } from '@nestjs/common';
import { runBounded } from '../../locking/bounded-operation';
import { LOCK_DEFAULTS } from '../../locking/lock-options';
import type { LockRegistry } from '../lock-registry';

/**
 * Warms the strategies of the application's `@ScheduledLock` jobs at bootstrap, before the scheduler
 * starts them: each one's `warmUp` (the database strategies initialise their pool and prepare their
 * statements and tables), else its `ping`. Without it a new instance's first fire pays for connecting and
 * preparing: 0.3 to 1.4 s with a dozen strategies in one process, against 10 to 150 ms for the fires
 * after it (measured on the test machine under load). A first fire that late may take the job's lock after
 * the instance that ran the same fire on time let it go at the end of `lockAtLeastFor`, and run that fire
 * a second time: `lockAtLeastFor` is chosen for the lateness of a running instance, not of one that starts.
 *
 * Each warm-up delays the bootstrap by the default operation timeout at most (a server down or slow at
 * bootstrap), and goes on in the background after that. A failure is logged as a warning, never thrown:
 * the application starts as it would have, and the first fire connects (or fails) as it would have.
 */
export async function warmUpStrategies(registry: LockRegistry, names: Iterable<string>, logger: Pick<Logger, 'warn'> = new Logger('DistributedLock')): Promise<void> {
  await Promise.all(
    [...names].map(async (name) => {
      const strategy = registry.manager(name).strategy;
      const warm = strategy.warmUp ?? strategy.ping;
      if (!warm) return;
      try {
        await runBounded({ strategy: name, operation: 'warm up', timeoutMs: LOCK_DEFAULTS.operationTimeout, run: () => warm.call(strategy) });
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        logger.warn(`Strategy "${name}" was not warmed up before the scheduled jobs start (${reason}); the first fire of each of its jobs connects instead.`);
      }
    }),
  );
}
