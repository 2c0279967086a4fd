// An application instance shut down while its server is frozen. Usage: frozen-close.worker <subject> <key>
// Two instances of one process (two managers, as two modules would have): one holds `key`, the other waits
// for it at the server. Prints "ready" then, and on a "close" line from stdin closes both managers and
// prints "closed <ms> <outcome of each close>". It never calls process.exit: the test watches whether the
// process then ends by itself, which it can only do once the strategies left no socket or timer behind.
import { createInterface } from 'node:readline';
import { LockManager, LockService } from './without-nest';
import { subjectNamed } from '../contract/subjects';

async function main(): Promise<void> {
  const [subject, key] = process.argv.slice(2);
  const operationTimeout = Number(process.env.LOCK_CLOSE_OPERATION_TIMEOUT ?? 1_000);
  const holder = new LockManager(await subjectNamed(subject).create(), { operationTimeout });
  const waiter = new LockManager(await subjectNamed(subject).create(), { operationTimeout });
  await new LockService(holder).acquire(key, { ttl: 30_000 });
  // Its outcome does not matter here (close ends it); left unhandled it would end the process with an error.
  void new LockService(waiter).acquire(key, { waitTimeout: 60_000 }).catch(() => undefined);
  // Long enough for the waiter's first server call to be under way at the server.
  setTimeout(() => process.stdout.write('ready\n'), 500);
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    if (line.trim() !== 'close') return;
    lines.close();
    // An open stdin alone would keep the process alive.
    process.stdin.destroy();
    const started = Date.now();
    void Promise.all(
      [holder, waiter].map((manager) =>
        manager.close().then(
          () => 'ok',
          (error: unknown) => (error instanceof Error ? error.name : String(error)),
        ),
      ),
    ).then((outcomes) => process.stdout.write(`closed ${Date.now() - started} ${outcomes.join(',')}\n`));
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
