import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { mariadbKind, postgresKind, type ServerKind } from './server-kinds';
import type { ServerRecord } from './service-state';

/** A member record in a fresh directory of its own: `prepare` only makes files there, on no port. */
function freshRecord(name: string): ServerRecord {
  const dir = mkdtempSync(join(tmpdir(), `kind-${name}-`));
  return { name, topology: name, command: 'none', args: [], cwd: dir, logFile: join(dir, 'server.log'), ports: [1], dir, pid: 0 };
}

/** The longest stand-still of this process's event loop (ms) while `prepare` makes a fresh instance. */
async function loopStandStillDuringPrepare(kind: ServerKind, record: ServerRecord): Promise<number> {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  // The monitor counts from its first tick: a stand-still before it goes unseen.
  await new Promise((resolve) => setTimeout(resolve, 30));
  try {
    await kind.prepare?.(record, [record]);
    // A stand-still is recorded when the loop turns again.
    await new Promise((resolve) => setTimeout(resolve, 50));
  } finally {
    delay.disable();
  }
  return delay.max / 1e6;
}

/**
 * The services start side by side in one process, each polled for readiness on a timer. A set-up step that
 * blocks the event loop for seconds starves every other server's probes: a Redis that served within ms was
 * reported "not ready within 10000 ms" while `mariadb-install-db` and `initdb` ran through `spawnSync`.
 */
describe.each([
  ['MariaDB (mariadb-install-db)', mariadbKind, 'mariadb'],
  ['PostgreSQL (initdb)', postgresKind, 'postgres'],
])('%s set-up', (_title, kind, name) => {
  it('leaves the event loop free while it runs (the other servers are probed meanwhile)', async () => {
    const record = freshRecord(name);
    try {
      // The set-up itself takes seconds; a loop free for the others stands still for far less than one.
      expect(await loopStandStillDuringPrepare(kind, record)).toBeLessThan(500);
    } finally {
      rmSync(record.dir, { recursive: true, force: true });
    }
  }, 120_000);
});
