// Holds one lock until killed. Usage: holder.worker <subject> <key> <ttlMs>
// Prints "held <token|->" once it holds the lock, and "lost <reason>" if it learns it lost it.
import { LockManager, LockService, type LockLostError } from '@app/distributed-lock';
import { subjectNamed } from '../contract/subjects';

async function main(): Promise<void> {
  const [subject, key, ttl] = process.argv.slice(2);
  const manager = new LockManager(await subjectNamed(subject).create());
  const lock = await new LockService(manager).acquire(key, { ttl: Number(ttl), autoExtend: true, waitTimeout: 20_000 });
  lock.signal.addEventListener('abort', () => process.stdout.write(`lost ${(lock.signal.reason as LockLostError).reason}\n`));
  process.stdout.write(`held ${lock.fencingToken ?? '-'}\n`);
  // Bounded: a holder nobody kills ends by itself.
  setTimeout(() => process.exit(0), 60_000);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
