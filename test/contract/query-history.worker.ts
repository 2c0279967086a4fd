// One contender of the query-history check (query.contract.ts). Usage: worker <subject> <key> <historyFile> <holder> <durationMs> <holdMs>
// Takes the key again and again for `durationMs` from its start, one acquisition at a time, holding it `holdMs` each
// time, and records each hold in the shared history (its section's first and last line, its loss, its end).
import { LockManager, LockService } from '../support/without-nest';
import { HistoryLog } from '../support/history/history-log';
import { recordedWithLock } from '../support/history/recorded-section';
import { subjectNamed } from './subjects';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

async function main(): Promise<void> {
  const [subjectName, key, historyFile, holder, durationMs, holdMs] = process.argv.slice(2);
  const manager = new LockManager(await subjectNamed(subjectName).create(), { operationTimeout: 20_000 });
  const locks = new LockService(manager);
  const log = new HistoryLog(historyFile);
  try {
    for (const until = Date.now() + Number(durationMs); Date.now() < until; ) {
      await recordedWithLock(log, holder, locks, key, () => sleep(Number(holdMs)), { waitTimeout: 30_000, ttl: 10_000 });
      // A short, varying gap, so that the processes take turns in different orders.
      await sleep(Math.random() * 20);
    }
    process.stdout.write('done\n');
  } finally {
    await manager.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
