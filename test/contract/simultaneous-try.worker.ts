// One instance of the simultaneous try-once run. Usage: worker <subject> <key> <dir> <index> <rounds> <periodMs> <holdMs>
// Announces itself with dir/ready-<index>, waits for dir/start (the first round's wall-clock time), then
// at each round's instant tries the round's key once, as every instance's scheduler does at a cron tick.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LockManager, LockService } from '@app/distributed-lock';
import { subjectNamed } from './subjects';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

async function main(): Promise<void> {
  const [subjectName, key, dir, index, roundsArg, periodArg, holdArg] = process.argv.slice(2);
  const [rounds, periodMs, holdMs] = [Number(roundsArg), Number(periodArg), Number(holdArg)];
  // Three TypeScript processes start at once on 2 shared cores: their first call may take seconds.
  const manager = new LockManager(await subjectNamed(subjectName).create(), { operationTimeout: 20_000 });
  const locks = new LockService(manager);
  const won: number[] = [];
  // Rounds this instance began trying after the others' winner may already have given the key back.
  const late: number[] = [];
  try {
    // The connection is made before the first round, as an app's is by the time its first tick fires.
    await (await locks.acquire(`${key}:warm-up:${index}`)).release();
    writeFileSync(join(dir, `ready-${index}`), '');
    const startFile = join(dir, 'start');
    while (!existsSync(startFile)) await sleep(10);
    const start = Number(readFileSync(startFile, 'utf8'));
    for (let round = 0; round < rounds; round += 1) {
      const instant = start + round * periodMs;
      await sleep(instant - Date.now());
      if (Date.now() - instant > holdMs / 2) late.push(round);
      const lock = await locks.tryAcquire(`${key}:${round}`, { reentrant: false, ttl: 30_000 });
      if (!lock) continue;
      won.push(round);
      await sleep(instant + holdMs - Date.now());
      await lock.release();
    }
  } finally {
    await manager.close();
  }
  process.stdout.write(`${JSON.stringify({ won, late })}\n`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
