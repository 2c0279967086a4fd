// One contender process of the cross-process semaphore gauge.
// Usage: semaphore-gauge.worker <subject> <key> <dir> <permits> <workers> <iterations> <holdMs>
import { LockManager, LockService } from '../support/without-nest';
import { SlotGauge } from './semaphore-gauge';
import { subjectNamed } from './subjects';

/** How long the run's holders wait for the others to come in before it goes on without them. */
const FULL_BOUND_MS = 10_000;

async function main(): Promise<void> {
  const [subjectName, key, dir, permitsArg, workersArg, iterationsArg, holdArg] = process.argv.slice(2);
  const permits = Number(permitsArg);
  const manager = new LockManager(await subjectNamed(subjectName).create());
  const locks = new LockService(manager);
  const gauge = new SlotGauge(dir, permits);
  const fullBy = Date.now() + FULL_BOUND_MS;
  let sections = 0;
  let violations = 0;
  let peak = 0;
  try {
    await Promise.all(
      Array.from({ length: Number(workersArg) }, async () => {
        for (let i = 0; i < Number(iterationsArg); i += 1) {
          await locks.withPermit(
            key,
            async () => {
              const place = gauge.enter();
              if (place.violation) violations += 1;
              peak = Math.max(peak, place.inside);
              await gauge.untilFull(fullBy);
              await new Promise((resolve) => setTimeout(resolve, Number(holdArg)));
              place.leave();
              sections += 1;
            },
            { permits, waitTimeout: 60_000 },
          );
        }
      }),
    );
  } finally {
    await manager.close();
  }
  process.stdout.write(`${JSON.stringify({ sections, violations, peak })}\n`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
