import type { BenchLock } from '../bench-subject';

/** What a contention loop did: sections run, and acquisitions that gave up (a peer's retries ran out) and were asked again. */
export interface Contended {
  readonly sections: number;
  readonly gaveUp: number;
}

/**
 * Every lock takes and releases `key` in a loop until `endAt` (ms since the epoch); sections acquired before
 * `countFrom` (a warm-up) are not counted. An acquisition that
 * gives up (redlock's default of 10 retries runs out under contention) is asked again, as its user would:
 * the work it spent counts, and so does the number of times.
 */
export async function contendUntil(locks: readonly BenchLock[], key: string, endAt: number, countFrom = 0): Promise<Contended> {
  let sections = 0;
  let gaveUp = 0;
  await Promise.all(
    locks.map(async (lock) => {
      while (Date.now() < endAt) {
        let release: () => Promise<unknown>;
        try {
          release = await lock.acquire(key, 5_000);
        } catch {
          if (Date.now() >= countFrom) gaveUp += 1;
          continue;
        }
        if (Date.now() >= countFrom) sections += 1;
        await release();
      }
    }),
  );
  return { sections, gaveUp };
}
