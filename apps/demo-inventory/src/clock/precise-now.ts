/** The two clocks the origin is found between: each process of the machine reads the same ones. */
export interface MachineClocks {
  /** The monotonic clock, in ms (`process.hrtime`: one clock for every process of the machine). */
  readonly monotonicMs: () => number;
  /** The wall clock, in whole ms (`Date.now()`). */
  readonly wallMs: () => number;
}

const SYSTEM_CLOCKS: MachineClocks = { monotonicMs: () => Number(process.hrtime.bigint()) / 1e6, wallMs: Date.now };

/** How many ticks of the wall clock to time at most, keeping the one timed most tightly. */
const TICKS_TIMED = 20;
/** A tick timed within this (ms of the monotonic clock) is taken at once. */
const TIGHT_ENOUGH_MS = 0.01;

/**
 * The epoch (ms) at the moment the monotonic clock read 0: found where the wall clock ticks to its next
 * millisecond, timed between two monotonic readings. A process paused between them times its tick loosely,
 * so the tightest of a few ticks is kept: right within a few µs, in every process alike, after at most
 * `TICKS_TIMED` ms of spinning at start-up.
 *
 * Not `performance.timeOrigin`: Node pairs one monotonic reading with one wall-clock reading at start-up, and
 * a process paused between the two (3 shops starting at once on 2 cores) is off by the pause, for its whole
 * life. One shop 4 ms off made its sections and the next holder's seem to overlap when they had not.
 */
export function epochAtMonotonicZero(clocks: MachineClocks = SYSTEM_CLOCKS): number {
  let best = { epochMs: 0, widthMs: Infinity };
  let lastWall = clocks.wallMs();
  let lastBeforeMs = clocks.monotonicMs();
  for (let ticks = 0; ticks < TICKS_TIMED && best.widthMs > TIGHT_ENOUGH_MS; ) {
    const beforeMs = clocks.monotonicMs();
    const wall = clocks.wallMs();
    const afterMs = clocks.monotonicMs();
    if (wall !== lastWall) {
      ticks += 1;
      // The wall clock turned to `wall` after the last reading of the old value began and before this one ended.
      const widthMs = afterMs - lastBeforeMs;
      if (wall === lastWall + 1 && widthMs < best.widthMs) best = { epochMs: wall - (lastBeforeMs + afterMs) / 2, widthMs };
      lastWall = wall;
    }
    lastBeforeMs = beforeMs;
  }
  // Never without a tick timed (each is within a ms of the last), but if so: right to the ms.
  return best.widthMs === Infinity ? clocks.wallMs() - clocks.monotonicMs() : best.epochMs;
}

const EPOCH_AT_MONOTONIC_ZERO = epochAtMonotonicZero();

/**
 * Now, in ms since the epoch with sub-millisecond precision, on a clock every process of the machine
 * shares: at whole milliseconds, a section and the next holder's would seem to overlap within one tick.
 * Monotonic after start-up (a wall-clock step later does not move it).
 */
export function preciseNow(): number {
  return EPOCH_AT_MONOTONIC_ZERO + SYSTEM_CLOCKS.monotonicMs();
}
