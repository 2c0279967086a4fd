// One process of the semaphore soak (see permit-soak.ts): SOAK_CONTENDERS contenders of one lock service
// take a permit of the semaphore SOAK_KEY (SOAK_PERMITS places, lease SOAK_TTL ms, kept alive by the
// watchdog) again and again until the file SOAK_STOP_FILE appears, each holding it for 10–150 ms, every hold
// recorded in the history LOCK_HISTORY_FILE under SOAK_NAME. Prints "contending" once started, then "done
// <json>". Bounded: it stops taking permits at SOAK_UNTIL (epoch ms) anyway, and exits at most 30 s later.
import { existsSync } from 'node:fs';
import { DistributedLockError, LockAcquireTimeoutError, LockLostError, LockManager, LockService, type PermitHandle } from './without-nest';
import { subjectNamed } from '../contract/subjects';
import { HistoryLog } from './history/history-log';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const env = (name: string): string => {
    const value = process.env[name];
    if (!value) throw new Error(`${name} is not set`);
    return value;
  };
  const name = env('SOAK_NAME');
  const key = env('SOAK_KEY');
  const permits = Number(env('SOAK_PERMITS'));
  const ttl = Number(env('SOAK_TTL'));
  const until = Number(env('SOAK_UNTIL'));
  const stopFile = env('SOAK_STOP_FILE');
  setTimeout(() => process.exit(2), Math.max(0, until - Date.now()) + 30_000).unref();
  const history = new HistoryLog(env('LOCK_HISTORY_FILE'));
  const manager = new LockManager(await subjectNamed(process.env.SOAK_SUBJECT ?? 'redis (fair)').create());
  const locks = new LockService(manager);
  const counts = { sections: 0, timeouts: 0, lost: 0, otherTyped: [] as string[], untyped: [] as string[] };
  process.stdout.write('contending\n');
  await Promise.all(
    Array.from({ length: Number(env('SOAK_CONTENDERS')) }, async () => {
      while (Date.now() < until && !existsSync(stopFile)) {
        let hold: ReturnType<HistoryLog['begin']> | undefined;
        try {
          await locks.withPermit(
            key,
            async (permit: PermitHandle) => {
              hold = history.begin(name, permit);
              try {
                await sleep(10 + Math.random() * 140);
              } finally {
                hold.sectionEnded();
              }
            },
            { permits, ttl, autoExtend: true, waitTimeout: 15_000 },
          );
          hold?.outcome('resolved');
          counts.sections += 1;
        } catch (error) {
          hold?.outcome((error as Error)?.name ?? 'Error');
          if (error instanceof LockAcquireTimeoutError) counts.timeouts += 1;
          else if (error instanceof LockLostError) counts.lost += 1;
          else if (error instanceof DistributedLockError) counts.otherTyped.push(`${error.name}: ${error.message}`);
          else counts.untyped.push(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
        }
      }
    }),
  );
  await manager.close();
  process.stdout.write(`done ${JSON.stringify(counts)}\n`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
