// One process of the multi-process case. Usage: worker <subject id> <key> <workers> <markerFile> <prefix> <resultFile> [<clients> <holdMs>]
// <clients>: lock clients in this process (1: its workers share one, as one app instance; = workers: one each).
// Handshake with the parent: prints "ready" once connected, then reads "<startAt> <measureFrom> <endAt>" on stdin,
// so that every process starts together however long its start-up took (sections before measureFrom: the warm-up).
import { writeFileSync } from 'node:fs';
import { once } from 'node:events';
import type { BenchLock } from './bench-subject';
import { benchSubject } from './subjects';
import { contend } from './contend';
import { wallClockMs } from './stats';

async function readWindow(): Promise<[number, number, number]> {
  let text = '';
  while (!text.includes('\n')) {
    const [chunk] = (await once(process.stdin, 'data')) as [Buffer];
    text += chunk.toString();
  }
  const [startAt, measureFrom, endAt] = text.trim().split(' ').map(Number);
  return [startAt, measureFrom, endAt];
}

async function main(): Promise<void> {
  const [subject, key, workers, markerFile, prefix, resultFile, clients = '1', holdMs = '0'] = process.argv.slice(2);
  const locks: BenchLock[] = [];
  for (let i = 0; i < Number(clients); i += 1) locks.push(await benchSubject(subject).create());
  const layout = { lockOf: (w: number) => locks[w % locks.length], holdMs: Number(holdMs) };
  process.stdout.write('ready\n');
  const [startAt, measureFrom, endAt] = await readWindow();
  process.stdin.pause();
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, startAt - wallClockMs())));
  const result = await contend(layout, key, Number(workers), endAt, { workerPrefix: prefix, markerFile, waitMs: 30_000, measureFrom, permits: benchSubject(subject).permits });
  for (const lock of locks) await lock.close();
  // A file, not stdout: a large result written to a pipe can be cut short by process.exit.
  // Without the per-worker waits: the parent needs only the pooled waits and each worker's p99.
  writeFileSync(resultFile, JSON.stringify({ ...result, workerWaits: undefined }));
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
