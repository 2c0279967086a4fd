// One application instance contending for a lock through its own ZooKeeper client, the way separate app
// instances are deployed: one native client per process (see docs/strategies/zookeeper.md, "one client per
// process"). Environment: CONTENDER_NAME, ZK_CONNECT, CONTENDER_KEY, CONTENDERS, DURATION_MS,
// LOCK_HISTORY_FILE. Prints "contending", contends for DURATION_MS, closes, and prints "done <json>" with
// its counts; a process that dies without that line (a native abort) is reported as a failed contender.
import { LockManager, LockService } from './without-nest';
import { ZooKeeperLockStrategy } from '@app/distributed-lock/strategies/zookeeper';
import { contendUntil } from './contend-loops';
import { HistoryLog } from './history/history-log';

async function main(): Promise<void> {
  const env = (name: string): string => {
    const value = process.env[name];
    if (!value) throw new Error(`${name} is not set`);
    return value;
  };
  const manager = new LockManager(new ZooKeeperLockStrategy({ connect: env('ZK_CONNECT'), sessionTimeout: 6_000 }), { operationTimeout: 4_000 });
  let lost = 0;
  manager.events.on('lost', () => (lost += 1));
  process.stdout.write('contending\n');
  const counts = await contendUntil([new LockService(manager)], new HistoryLog(env('LOCK_HISTORY_FILE')), env('CONTENDER_KEY'), {
    contenders: Number(env('CONTENDERS')),
    stopAt: Date.now() + Number(env('DURATION_MS')),
    acquire: { waitTimeout: 5_000 },
    holderPrefix: env('CONTENDER_NAME'),
  });
  await manager.close();
  const untyped = counts.untyped.map((error) => (error instanceof Error ? `${error.name}: ${error.message}` : String(error)));
  process.stdout.write(`done ${JSON.stringify({ ...counts, untyped, lost })}\n`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
