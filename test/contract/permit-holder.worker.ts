// Holds one permit until killed. Usage: permit-holder.worker <subject> <key> <permits> <ttlMs>
// Prints "held <token|->" once it holds the permit, and "lost <reason>" if it is told it lost it. Bounded: it
// exits by itself after 60 s.
import { LockManager, LockService } from '../support/without-nest';
import { subjectNamed } from './subjects';

// Whatever ends it early shows in the test's failure (its stderr), rather than as a holder that says nothing.
process.on('unhandledRejection', (reason: unknown) => {
  process.stderr.write(`unhandled rejection: ${reason instanceof Error ? reason.stack : String(reason)}\n`);
  process.exit(1);
});
process.on('exit', (code) => process.stderr.write(`exiting with ${code}\n`));

async function main(): Promise<void> {
  const [subject, key, permits, ttl] = process.argv.slice(2);
  const manager = new LockManager(await subjectNamed(subject).create());
  const permit = await new LockService(manager).acquirePermit(key, { permits: Number(permits), ttl: Number(ttl), autoExtend: true, waitTimeout: 20_000 });
  // Listened for before "held" is said: the test freezes the holder the moment it reads "held", and a signal
  // first read after waking is already aborted (the session is found expired as it is read), and an 'abort'
  // listener added to an aborted signal never runs.
  const tellLost = (): void => void process.stdout.write(`lost ${(permit.signal.reason as { reason?: string }).reason ?? 'unknown'}\n`);
  if (permit.signal.aborted) tellLost();
  else permit.signal.addEventListener('abort', tellLost, { once: true });
  process.stdout.write(`held ${permit.fencingToken ?? '-'}\n`);
  setTimeout(() => process.exit(0), 60_000);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
