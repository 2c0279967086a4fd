// One process of a cross-process session (see cross-process.ts).
// Usage: worker <subject> <key> <dir> <index> <workers> <iterations> <tickRounds> <tickPeriodMs> <tickHoldMs>
import { closeSync, existsSync, openSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import type { TickHold } from './cross-process';
import { join } from 'node:path';
import { LockManager, LockService } from '../support/without-nest';
import { subjectNamed } from './subjects';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** Workers contend for `key`; inside, a marker file made exclusively and a read-yield-write counter. */
async function fuzz(locks: LockService, key: string, dir: string, workers: number, iterations: number): Promise<{ sections: number; violations: number }> {
  const marker = join(dir, 'inside');
  const counterFile = join(dir, 'counter');
  let sections = 0;
  let violations = 0;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      for (let i = 0; i < iterations; i += 1) {
        await locks.withLock(
          key,
          async () => {
            let fd: number | undefined;
            try {
              fd = openSync(marker, 'wx');
            } catch {
              violations += 1;
            }
            const read = Number(readFileSync(counterFile, 'utf8'));
            await sleep(1);
            writeFileSync(counterFile, String(read + 1));
            if (fd !== undefined) {
              closeSync(fd);
              unlinkSync(marker);
            }
            sections += 1;
          },
          { waitTimeout: 60_000 },
        );
      }
    }),
  );
  return { sections, violations };
}

/**
 * Says it is ready (dir/ready-<index>), waits for dir/start, then at each round's instant tries the round's
 * key once and, when it got it, holds it for `holdMs` from the instant. Reports each hold: the server held
 * the lock at least from its answer to the release, so two reported holds that overlap were at once.
 */
async function ticks(locks: LockService, key: string, dir: string, index: string, rounds: number, periodMs: number, holdMs: number): Promise<{ holds: TickHold[] }> {
  const holds: TickHold[] = [];
  writeFileSync(join(dir, `ready-${index}`), '');
  const startFile = join(dir, 'start');
  while (!existsSync(startFile)) await sleep(10);
  const start = Number(readFileSync(startFile, 'utf8'));
  for (let round = 0; round < rounds; round += 1) {
    const instant = start + round * periodMs;
    await sleep(instant - Date.now());
    const lock = await locks.tryAcquire(`${key}:tick:${round}`, { reentrant: false, ttl: 30_000 });
    if (!lock) continue;
    const heldFrom = Date.now();
    await sleep(instant + holdMs - Date.now());
    holds.push([round, heldFrom, Date.now()]);
    await lock.release();
  }
  return { holds };
}

async function main(): Promise<void> {
  const [subjectName, key, dir, index, workers, iterations, tickRounds, tickPeriodMs, tickHoldMs] = process.argv.slice(2);
  // Three TypeScript processes start at once on 2 shared cores: their first calls may take seconds.
  const manager = new LockManager(await subjectNamed(subjectName).create(), { operationTimeout: 20_000 });
  const locks = new LockService(manager);
  try {
    const fuzzed = await fuzz(locks, key, dir, Number(workers), Number(iterations));
    const ticked = await ticks(locks, key, dir, index, Number(tickRounds), Number(tickPeriodMs), Number(tickHoldMs));
    process.stdout.write(`${JSON.stringify({ ...fuzzed, ...ticked })}\n`);
  } finally {
    await manager.close();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
