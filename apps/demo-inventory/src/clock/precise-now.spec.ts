import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { epochAtMonotonicZero, preciseNow, type MachineClocks } from './precise-now';

const run = promisify(execFile);
const MODULE = join(__dirname, 'precise-now.ts');

/**
 * In a fresh process: bounds on how far `preciseNow()` is off the wall clock, from 50 ms of readings.
 * `Date.now()` is that clock in whole ms, the same in every process. Read just before `preciseNow()`, it is at
 * most the true time, so `preciseNow() - Date.now()` is at least the error: its lowest is an upper bound.
 * Read just after, it is more than the true time less 1 ms, so the highest of `preciseNow() - Date.now()`,
 * less 1, is a lower bound. A process paused between two readings only loosens a bound, never breaks it.
 */
async function errorBoundsInFreshProcess(): Promise<{ atLeast: number; atMost: number }> {
  const source = `
    const { preciseNow } = require(${JSON.stringify(MODULE)});
    let atMost = Infinity, atLeast = -Infinity;
    for (const end = Date.now() + 50; Date.now() < end; ) {
      const wallBefore = Date.now();
      const precise = preciseNow();
      const wallAfter = Date.now();
      atMost = Math.min(atMost, precise - wallBefore);
      atLeast = Math.max(atLeast, precise - wallAfter - 1);
    }
    console.log(JSON.stringify({ atLeast, atMost }));`;
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '-e', source], { timeout: 30_000 });
  return JSON.parse(stdout) as { atLeast: number; atMost: number };
}

/**
 * A machine whose wall clock reads `epochAtZero` ms more than its monotonic clock, where every reading takes
 * 0.3 µs, and where the process is paused before the readings listed in `pausesMs` (reading number → ms).
 */
function machine(epochAtZero: number, pausesMs: ReadonlyMap<number, number>): MachineClocks {
  let now = 1_000.123;
  let readings = 0;
  const read = (): number => {
    now += 0.0003 + (pausesMs.get(readings) ?? 0);
    readings += 1;
    return now;
  };
  return { monotonicMs: read, wallMs: () => Math.floor(epochAtZero + read()) };
}

describe('epochAtMonotonicZero', () => {
  const EPOCH_AT_ZERO = 1_796_000_000_000.457;

  it('finds the origin within a few µs', () => {
    expect(Math.abs(epochAtMonotonicZero(machine(EPOCH_AT_ZERO, new Map())) - EPOCH_AT_ZERO)).toBeLessThan(0.005);
  });

  it('is not thrown off by a process paused between its readings (one origin taken from one pair of readings is off by the pause)', () => {
    // Paused for 0.8 ms among the readings that time the wall clock's first tick (timed alone, that tick is
    // off by 0.58 ms), then for 4 and 7 ms.
    const firstTickRead = 3 + 3 * Math.ceil((1 - ((EPOCH_AT_ZERO + 1_000.123) % 1)) / 0.0009);
    const paused = machine(EPOCH_AT_ZERO, new Map([[firstTickRead - 9, 0.8], [4, 4], [5_000, 7]]));
    expect(Math.abs(epochAtMonotonicZero(paused) - EPOCH_AT_ZERO)).toBeLessThan(0.005);
  });
});

describe('preciseNow', () => {
  it('agrees with the wall clock to well under a millisecond in every process (the shops compare their sections on it)', async () => {
    // Several processes started at once, as the shops are: each finds its own origin.
    const bounds = await Promise.all(Array.from({ length: 4 }, () => errorBoundsInFreshProcess()));
    // Off by less than 0.2 ms either way (`performance.timeOrigin` was off by several ms).
    for (const { atLeast, atMost } of bounds) {
      expect(atLeast).toBeGreaterThan(-0.2);
      expect(atMost).toBeLessThan(0.2);
    }
  }, 60_000);

  it('never runs backwards', () => {
    let last = preciseNow();
    for (let i = 0; i < 10_000; i += 1) {
      const now = preciseNow();
      expect(now).toBeGreaterThanOrEqual(last);
      last = now;
    }
  });
});
