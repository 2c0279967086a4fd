import type { LockService } from '@app/distributed-lock';

/** Outcome of a concurrent-counter run. */
export interface FuzzOutcome {
  readonly sections: number;
  readonly violations: number;
  readonly counter: number;
  readonly perWorker: readonly number[];
}

/**
 * `workers` contenders each run `iterations` critical sections on one key. Inside, a read-yield-write of
 * a shared counter loses updates if two are ever inside at once, and an `inside` gauge counts overlaps
 * directly. A correct lock gives `violations = 0` and `counter = workers × iterations`.
 */
export async function runCounterFuzz(
  services: readonly LockService[],
  key: string,
  workers: number,
  iterations: number,
  holdMs = 1,
): Promise<FuzzOutcome> {
  let inside = 0;
  let violations = 0;
  let counter = 0;
  const perWorker = new Array<number>(workers).fill(0);
  await Promise.all(
    Array.from({ length: workers }, async (_, worker) => {
      const service = services[worker % services.length];
      for (let i = 0; i < iterations; i += 1) {
        await service.withLock(
          key,
          async () => {
            inside += 1;
            if (inside > 1) violations += 1;
            const read = counter;
            await new Promise((resolve) => setTimeout(resolve, holdMs));
            counter = read + 1;
            inside -= 1;
          },
          { waitTimeout: 60_000 },
        );
        perWorker[worker] += 1;
      }
    }),
  );
  return { sections: workers * iterations, violations, counter, perWorker };
}
