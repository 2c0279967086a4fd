import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runWorkerProcess } from './cross-process';

const WORKER = join(__dirname, 'simultaneous-try.worker.ts');
const PERIOD_MS = 150;
const HOLD_MS = 100;

/** Per round, how many instances got the key; and the rounds some instance tried too late to count doubles. */
export interface SimultaneousTryOutcome {
  readonly winners: readonly number[];
  readonly late: ReadonlySet<number>;
}

/**
 * `processes` separate instances of the named subject try a fresh key once at the same wall-clock instant,
 * `rounds` times (a cron tick on every instance). A winner holds its key until the round is nearly over, so
 * that every instance that tried on time found it taken: exactly one winner per round is the promise.
 */
export async function runSimultaneousTries(subject: string, key: string, processes: number, rounds: number, timeoutMs = 60_000): Promise<SimultaneousTryOutcome> {
  const dir = mkdtempSync(join(tmpdir(), 'lock-tick-'));
  try {
    const results = Array.from({ length: processes }, (_, i) =>
      runWorkerProcess<{ won: number[]; late: number[] }>(WORKER, [subject, key, dir, String(i), String(rounds), String(PERIOD_MS), String(HOLD_MS)], timeoutMs),
    );
    // A worker that fails before it is ready ends the wait below through its rejection.
    const failed = Promise.race(results).then(() => undefined);
    const deadline = Date.now() + timeoutMs;
    while (!Array.from({ length: processes }, (_, i) => existsSync(join(dir, `ready-${i}`))).every(Boolean)) {
      if (Date.now() > deadline) throw new Error(`the ${processes} instances were not ready within ${timeoutMs} ms`);
      await Promise.race([failed, new Promise((resolve) => setTimeout(resolve, 20))]);
    }
    writeFileSync(join(dir, 'start'), String(Date.now() + 200));
    const outcomes = await Promise.all(results);
    const winners = Array.from({ length: rounds }, (_, round) => outcomes.filter((o) => o.won.includes(round)).length);
    return { winners, late: new Set(outcomes.flatMap((o) => o.late)) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
