// One process of the multi-process case. Usage: worker <subject> <key> <workers> <startAt> <endAt> <markerFile> <prefix> <resultFile>
import { writeFileSync } from 'node:fs';
import { benchSubject } from './subjects';
import { contend } from './contend';
import { wallClockMs } from './stats';

async function main(): Promise<void> {
  const [subject, key, workers, startAt, endAt, markerFile, prefix, resultFile] = process.argv.slice(2);
  const lock = await benchSubject(subject).create();
  // Everyone starts together: wait for the agreed start time.
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, Number(startAt) - wallClockMs())));
  const result = await contend(lock, key, Number(workers), Number(endAt), { workerPrefix: prefix, markerFile, waitMs: 30_000 });
  await lock.close();
  // A file, not stdout: a large result written to a pipe can be cut short by process.exit.
  writeFileSync(resultFile, JSON.stringify(result));
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
