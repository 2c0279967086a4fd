import { setTimeout as sleep } from 'node:timers/promises';

/** The longest pause between two looks (the first is 1 ms, doubled each time). */
const LONGEST_LOOK_PAUSE_MS = 50;

/**
 * Looks (`look`) until it answers true, or `withinMs` has passed, or `signal` aborts (the caller gave up):
 * resolves whether it did. The first look goes at once; the pauses between them grow from 1 ms to 50 ms,
 * so a fast answer costs little and a slow one few statements. Once `signal` aborts, no look starts.
 */
export async function lookUntil(look: () => Promise<boolean>, withinMs: number, signal?: AbortSignal): Promise<boolean> {
  const until = performance.now() + withinMs;
  for (let pause = 1; !signal?.aborted; pause = Math.min(pause * 2, LONGEST_LOOK_PAUSE_MS)) {
    if (await look()) return true;
    if (performance.now() > until || signal?.aborted) return false;
    try {
      await sleep(pause, undefined, signal ? { signal } : undefined);
    } catch {
      return false; // aborted while pausing
    }
  }
  return false;
}
