import type { BenchLock } from './bench-subject';

/**
 * An in-process FIFO mutex for the benchmark harness's own tests: each acquisition takes `latencyMs`
 * once the previous holder released, like a round trip to a lock server.
 */
export function localMutex(latencyMs: number): BenchLock {
  let tail: Promise<void> = Promise.resolve();
  return {
    async acquire() {
      let release: () => void = () => undefined;
      const previous = tail;
      tail = new Promise<void>((resolve) => (release = resolve));
      await previous;
      await new Promise((resolve) => setTimeout(resolve, latencyMs));
      return async () => release();
    },
    close: async () => undefined,
  };
}
