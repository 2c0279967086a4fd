// An application instance shut down while its server is frozen. Usage: frozen-close.worker <subject> <key> <shape>
// Shapes (what the process is doing when the server freezes):
// - hold-and-wait: two instances of one process (two managers, as two modules would have): one holds `key`,
//   the other waits for it at the server;
// - idle: one instance that took and released a lock, its pool's connections idle;
// - replication: as hold-and-wait, on a data source with a replication set (the same server as master and replica);
// - opening: one instance that never used its server: its first acquisition opens the pool after the freeze.
// Prints "ready", and on a "close" line from stdin closes its managers and prints "closed <ms> <outcome of
// each close>". It never calls process.exit: the test watches whether the process then ends by itself, which
// it can only do once the strategies left no socket or timer behind.
import { createInterface } from 'node:readline';
import type { DataSourceOptions } from 'typeorm';
import { LockManager, LockService } from './without-nest';
import type { LockStrategy } from '@app/distributed-lock';
import { PessimisticLockStrategy, RowLockStrategy } from '@app/distributed-lock/strategies/database';
import { subjectNamed } from '../contract/subjects';

/** The subject's strategy, on a data source whose replication set names its server twice. */
function replicated(subject: string): LockStrategy {
  const postgres = subject.includes('PostgreSQL');
  const url = (postgres ? process.env.LOCK_TEST_POSTGRES_URL : process.env.LOCK_TEST_MYSQL_URL) as string;
  const connection = { type: postgres ? 'postgres' : 'mysql', replication: { master: { url }, slaves: [{ url }] }, poolSize: 4 } as DataSourceOptions;
  if (subject.startsWith('row')) return new RowLockStrategy({ connection, name: 'row-replicated' });
  if (subject.startsWith('pessimistic')) return new PessimisticLockStrategy({ connection, name: 'pessimistic-replicated' });
  throw new Error(`no replicated form of ${subject}`);
}

async function main(): Promise<void> {
  const [subject, key, shape] = process.argv.slice(2);
  const operationTimeout = Number(process.env.LOCK_CLOSE_OPERATION_TIMEOUT ?? 1_000);
  const create = (): Promise<LockStrategy> => (shape === 'replication' ? Promise.resolve(replicated(subject)) : subjectNamed(subject).create());
  const managers = [new LockManager(await create(), { operationTimeout })];
  if (shape === 'hold-and-wait' || shape === 'replication') {
    managers.push(new LockManager(await create(), { operationTimeout }));
    await new LockService(managers[0]).acquire(key, { ttl: 30_000 });
    // Its outcome does not matter here (close ends it); left unhandled it would end the process with an error.
    void new LockService(managers[1]).acquire(key, { waitTimeout: 60_000 }).catch(() => undefined);
  } else if (shape === 'idle') {
    await (await new LockService(managers[0]).acquire(key)).release();
  } else if (shape !== 'opening') {
    throw new Error(`unknown shape ${shape}`);
  }
  // Long enough for the waiter's first server call to be under way at the server.
  setTimeout(() => process.stdout.write('ready\n'), 500);
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    if (line.trim() !== 'close') return;
    lines.close();
    // An open stdin alone would keep the process alive.
    process.stdin.destroy();
    // The server is frozen now: the first acquisition opens the pool against it.
    if (shape === 'opening') void new LockService(managers[0]).acquire(key, { waitTimeout: 60_000 }).catch(() => undefined);
    setTimeout(() => {
      const started = Date.now();
      void Promise.all(
        managers.map((manager) =>
          manager.close().then(
            () => 'ok',
            (error: unknown) => (error instanceof Error ? error.name : String(error)),
          ),
        ),
      ).then((outcomes) => process.stdout.write(`closed ${Date.now() - started} ${outcomes.join(',')}\n`));
    }, shape === 'opening' ? 300 : 0);
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
