import type { BenchLock } from '../bench-subject';

/** Every lock takes and releases `key` in a loop until `endAt` (ms since the epoch); returns the sections done. */
export async function contendUntil(locks: readonly BenchLock[], key: string, endAt: number): Promise<number> {
  let sections = 0;
  await Promise.all(
    locks.map(async (lock) => {
      while (Date.now() < endAt) {
        const release = await lock.acquire(key, 5_000);
        sections += 1;
        await release();
      }
    }),
  );
  return sections;
}
