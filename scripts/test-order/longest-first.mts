import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Seconds each test file took in a recorded run (record-durations.mjs), by path from the repository root. */
const recorded: Record<string, number> = JSON.parse(readFileSync(join(import.meta.dirname, 'test-durations.json'), 'utf8'));

/**
 * Vitest's order of groups, and within each group its files longest first (by the longer of Vitest's own
 * timing and a recorded run's), whichever project they belong to. On a fresh clone
 * Vitest has no timings and starts the largest files first, so a short file that runs long (the whole
 * contract again with fast paths off) started last and finished more than a minute after the others.
 */
export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const ordered = await super.sort(files);
    const root = this.ctx.config.root;
    const seconds = (spec: TestSpecification): number => {
      const path = relative(root, spec.moduleId);
      const timed = this.ctx.cache.getFileTestResults(`${spec.project.name}:${path}`);
      // The longer of the two: Vitest times a file also in a run filtered to one of its tests (`-t`), which
      // put the whole contract file last in the next full run (seen: it began 300 s in, and ended the pool).
      return Math.max(timed ? timed.duration / 1000 : 0, recorded[path] ?? 0);
    };
    // A group's projects share its workers (e2e beside the contract files): longest first across them.
    const group = (spec: TestSpecification): number => spec.project.config.sequence.groupOrder;
    // Stable within each group: Vitest's order stays where the durations tie.
    const rank = new Map(ordered.map((spec, index) => [spec, index]));
    return ordered.sort((a, b) => {
      if (group(a) !== group(b)) return (rank.get(a) ?? 0) - (rank.get(b) ?? 0);
      return seconds(b) - seconds(a) || (rank.get(a) ?? 0) - (rank.get(b) ?? 0);
    });
  }
}
