// One contender process of the cross-process fuzz. Usage: worker <subject> <key> <dir> <workers> <iterations>
import { closeSync, openSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LockManager, LockService } from '@app/distributed-lock';
import { subjectNamed } from './subjects';

async function main(): Promise<void> {
  const [subjectName, key, dir, workersArg, iterationsArg] = process.argv.slice(2);
  const strategy = await subjectNamed(subjectName).create();
  const manager = new LockManager(strategy);
  const locks = new LockService(manager);
  const marker = join(dir, 'inside');
  const counterFile = join(dir, 'counter');
  let sections = 0;
  let violations = 0;
  try {
    await Promise.all(
      Array.from({ length: Number(workersArg) }, async () => {
        for (let i = 0; i < Number(iterationsArg); i += 1) {
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
              await new Promise((resolve) => setTimeout(resolve, 1));
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
  } finally {
    await manager.close();
  }
  process.stdout.write(`${JSON.stringify({ sections, violations })}\n`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
