// Holds one lock until killed. Usage: holder.worker <subject> <key> <ttlMs> [fencedResourceId]
// Prints "held <token|->" once it holds the lock, and "lost <reason>" if it learns it lost it. With a
// fenced resource id, it writes to that resource with its token at once ("write accepted|rejected …"),
// and again on every "write" line read from stdin: the write a paused holder attempts when it wakes.
import { createInterface } from 'node:readline';
import { LockManager, LockService, type LockLostError } from './without-nest';
import { subjectNamed } from '../contract/subjects';
import { FencedResource } from './fenced-resource';
import { HistoryLog } from './history/history-log';

async function main(): Promise<void> {
  const [subject, key, ttl, resourceId] = process.argv.slice(2);
  // A fault test may shorten the bound of each server call, to freeze the holder for about one of them.
  const operationTimeout = process.env.LOCK_HOLDER_OPERATION_TIMEOUT ? Number(process.env.LOCK_HOLDER_OPERATION_TIMEOUT) : undefined;
  const manager = new LockManager(await subjectNamed(subject).create(), { operationTimeout });
  // Said before the acquisition: a test that freezes a waiting holder knows it is about to queue.
  process.stdout.write('acquiring\n');
  const lock = await new LockService(manager).acquire(key, { ttl: Number(ttl), autoExtend: true, waitTimeout: 20_000 });
  // Recorded for the scenario's history checker: this holder's view of its hold (it never ends it: it is
  // killed inside it).
  if (process.env.LOCK_HISTORY_FILE) new HistoryLog(process.env.LOCK_HISTORY_FILE).begin(`holder-${process.pid}`, lock);
  lock.signal.addEventListener('abort', () => process.stdout.write(`lost ${(lock.signal.reason as LockLostError).reason}\n`));
  process.stdout.write(`held ${lock.fencingToken ?? '-'}\n`);
  if (resourceId) {
    const resource = new FencedResource();
    const write = async (): Promise<void> => {
      // A careless holder: it writes whatever its signal says, and relies on the fencing check.
      const aborted = lock.signal.aborted;
      const seq = await resource.writeNumbered(resourceId, lock.fencingToken as number, 'paused-holder');
      const applied = seq !== undefined;
      if (applied && process.env.LOCK_HISTORY_FILE) new HistoryLog(process.env.LOCK_HISTORY_FILE).write(resourceId, lock.fencingToken as number, seq);
      process.stdout.write(`write ${applied ? 'accepted' : 'rejected'} aborted=${aborted}\n`);
    };
    await write();
    createInterface({ input: process.stdin }).on('line', (line) => {
      if (line.trim() === 'write') void write();
    });
  }
  // Bounded: a holder nobody kills ends by itself.
  setTimeout(() => process.exit(0), 60_000);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
