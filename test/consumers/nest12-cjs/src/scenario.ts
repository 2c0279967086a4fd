// One app instance of the two-process check: boot, say "ready", wait for "go" on stdin (so that both
// instances start together), run CALLS increments, PARALLEL at a time, then close.
import { NestFactory } from '@nestjs/core';
import { once } from 'node:events';
import { AppModule } from './app.module';
import { CounterService } from './counter.service';
import { ZooKeeperCounterService } from './zookeeper-counter.service';

const calls = Number(process.env.CALLS ?? 100);
const parallel = Number(process.env.PARALLEL ?? 10);
const name = process.env.COUNTER_NAME ?? 'scenario';
const mode = process.env.LOCKS ?? 'redis';

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
  const counter = app.get(CounterService);
  const increments: Record<string, (name: string) => Promise<number>> = {
    off: (n) => counter.incrementUnlocked(n),
    row: (n) => counter.incrementUnderRowLock(n),
    pessimistic: (n) => counter.incrementUnderLedgerLock(n),
    named: (n) => counter.incrementUnderNamedLock(n),
    zookeeper: (n) => app.get(ZooKeeperCounterService).increment(n),
  };
  const increment = increments[mode] ?? ((n: string) => counter.increment(n));
  console.log('ready');
  await once(process.stdin, 'data');
  let started = 0;
  const worker = async (): Promise<void> => {
    while (started < calls) {
      started += 1;
      await increment(name);
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  await app.close();
  console.log(JSON.stringify({ done: calls, node: process.version }));
  process.stdin.destroy();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
