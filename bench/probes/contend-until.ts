import type { BenchLock } from '../bench-subject';
import { SEMAPHORE_SUBJECTS } from '../semaphore-subjects';
import { BENCH_SUBJECTS } from '../subjects';

/** `instances` app instances of a subject (bench/subjects.ts or bench/semaphore-subjects.ts), each its own client. */
export async function probeLocks(subjectId: string, instances: number): Promise<BenchLock[]> {
  const subject = [...BENCH_SUBJECTS, ...SEMAPHORE_SUBJECTS].find((s) => s.id === subjectId);
  if (!subject) throw new Error(`unknown subject ${subjectId}`);
  return Promise.all(Array.from({ length: instances }, () => subject.create()));
}

/** What a contention loop did: sections run, and acquisitions that gave up (a peer's retries ran out) and were asked again. */
export interface Contended {
  readonly sections: number;
  readonly gaveUp: number;
}

/**
 * Every lock takes and releases `key` in a loop until `endAt` (ms since the epoch); sections acquired before
 * `countFrom` (a warm-up) are not counted; `onSection` hears of each section once it is released. An acquisition that
 * gives up (redlock's default of 10 retries runs out under contention) is asked again, as its user would:
 * the work it spent counts, and so does the number of times.
 */
export async function contendUntil(locks: readonly BenchLock[], key: string, endAt: number, countFrom = 0, onSection?: () => void): Promise<Contended> {
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
        onSection?.();
      }
    }),
  );
  return { sections, gaveUp };
}
