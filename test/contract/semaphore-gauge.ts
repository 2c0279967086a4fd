import { closeSync, existsSync, mkdtempSync, openSync, readdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runWorkerProcess } from './cross-process';

/** What a gauge run saw. */
export interface GaugeOutcome {
  /** Sections run under a permit. */
  readonly sections: number;
  /** Sections that found every one of the `permits` places taken: more than `permits` holders at once. */
  readonly violations: number;
  /** The most holders seen inside at once. */
  readonly peak: number;
}

/**
 * A gauge of holders shared by every process of the machine: one file per place in a directory. A holder
 * takes the first free place with an exclusive create (atomic across processes); finding none free means
 * more than `permits` holders at once. `enter` resolves a function that frees the place.
 *
 * `untilFull` keeps a holder inside until the gauge has once seen every place taken (by a deadline for the run): how many
 * holders overlap must not depend on how fast the machine runs, or a loaded machine whose grants come
 * slower than the sections end would show a semaphore that works as one that lets only one in.
 */
export class SlotGauge {
  constructor(
    readonly dir: string,
    private readonly permits: number,
  ) {}

  /** Takes a place; `violation` when none was free, `inside` the holders counted right after. */
  enter(): { violation: boolean; inside: number; leave: () => void } {
    for (let slot = 0; slot < this.permits; slot += 1) {
      const file = join(this.dir, `slot-${slot}`);
      let fd: number;
      try {
        fd = openSync(file, 'wx');
      } catch {
        continue;
      }
      const inside = readdirSync(this.dir).filter((name) => name.startsWith('slot-')).length;
      if (inside === this.permits) writeFileSync(join(this.dir, 'full'), '');
      return {
        violation: false,
        inside,
        leave: () => {
          closeSync(fd);
          unlinkSync(file);
        },
      };
    }
    return { violation: true, inside: this.permits + 1, leave: () => undefined };
  }

  /** Resolves once every place has been taken at the same time, or at `until` (a semaphore that lets fewer in). */
  async untilFull(until: number): Promise<void> {
    while (!existsSync(join(this.dir, 'full')) && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

const WORKER = join(__dirname, 'semaphore-gauge.worker.ts');

/**
 * Starts `processes` separate Node processes that each run `workers` contenders taking a permit of the
 * semaphore `key` (`permits` places) `iterations` times with the named subject's strategy, holding it for
 * `holdMs` inside the shared gauge. Every child is bounded by a timeout and killed if it overruns.
 */
export async function runCrossProcessGauge(
  subject: string,
  key: string,
  options: { processes: number; workers: number; iterations: number; permits: number; holdMs: number },
  timeoutMs = 90_000,
): Promise<GaugeOutcome> {
  const dir = mkdtempSync(join(tmpdir(), 'semaphore-gauge-'));
  try {
    const args = [subject, key, dir, String(options.permits), String(options.workers), String(options.iterations), String(options.holdMs)];
    const results = await Promise.all(Array.from({ length: options.processes }, () => runWorkerProcess<GaugeOutcome>(WORKER, args, timeoutMs)));
    return {
      sections: results.reduce((sum, r) => sum + r.sections, 0),
      violations: results.reduce((sum, r) => sum + r.violations, 0),
      peak: Math.max(...results.map((r) => r.peak)),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
