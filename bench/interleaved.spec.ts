import type { BenchSubject } from './bench-subject';
import { contend } from './contend';
import { caseInTurns, CONTENDED_TURNS } from './interleaved';
import { localMutex } from './local-mutex.fixture';
import { wallClockMs } from './stats';

const subject = (id: string): BenchSubject => ({ id, subject: id, ours: false, backend: 'memory', settings: '', crossProcess: false, create: async () => localMutex(2) });

describe('contend', () => {
  it('measures only from measureFrom, and counts for throughput only sections acquired before the end', async () => {
    // Every worker enters its loop only if the window has not ended yet: a stall between these lines and that
    // first check that outlasted a 60 ms window left no section at all. 400 ms outlasts a 300 ms stall; once
    // a worker is in, a stall only moves sections past the end, where they are still recorded.
    const start = wallClockMs();
    const from = start + 30;
    const endAt = from + 400;
    const result = await contend(localMutex(2), 'k', 3, endAt, { workerPrefix: 'w', waitMs: 1_000, measureFrom: from });
    expect(result.sections.length).toBeGreaterThan(0);
    expect(result.sections.every((section) => section.acquiredAt >= from)).toBe(true);
    expect(result.inWindow).toBe(result.sections.filter((section) => section.acquiredAt < endAt).length);
    // The workers still waiting at the end acquire after it: recorded, not counted for throughput.
    expect(result.inWindow).toBeLessThan(result.sections.length);
    expect(result.perWorker.reduce((a, b) => a + b, 0)).toBe(result.sections.length);
    expect(result.waits).toHaveLength(result.sections.length);
    expect(result.violations).toBe(0);
  });
});

describe('contend with a layout', () => {
  it('gives each worker its own client, holds each section for the work, and sees an overlap between clients that do not share state', async () => {
    const clients = [localMutex(1), localMutex(1), localMutex(1)];
    const used = new Set<number>();
    const layout = {
      lockOf: (w: number) => {
        used.add(w);
        return clients[w];
      },
      holdMs: 5,
    };
    // 400 ms, not 60: a stall before the workers' first loop check must not leave the window already over.
    const result = await contend(layout, 'k', 3, wallClockMs() + 400, { workerPrefix: 'w', waitMs: 1_000 });
    expect([...used].sort()).toEqual([0, 1, 2]);
    expect(result.sections.every((section) => section.releasedAt - section.acquiredAt >= 4)).toBe(true);
    // Three separate in-process mutexes are three locks: the overlap gauge must catch it.
    expect(result.violations).toBeGreaterThan(0);
  });
});

describe('caseInTurns', () => {
  it('joins the turns of a contended case worker by worker, over the windows only', async () => {
    const [a, b] = [subject('a'), subject('b')];
    const measured = await caseInTurns([a, b], 2, 400);
    for (const s of [a, b]) {
      const { result, elapsed } = measured.get(s) as NonNullable<ReturnType<typeof measured.get>>;
      // 4 windows of 100 ms; the 40 ms before each are not measured.
      expect(elapsed).toBe(CONTENDED_TURNS * 100);
      expect(result.perWorker).toHaveLength(2);
      expect(result.workerWaitP99).toHaveLength(2);
      expect(result.perWorker.reduce((x, y) => x + y, 0)).toBe(result.sections.length);
      expect(new Set(result.sections.map((section) => section.run))).toEqual(new Set([0, 1, 2, 3]));
      expect(result.inWindow).toBeGreaterThan(0);
      expect(result.inWindow).toBeLessThanOrEqual(result.sections.length);
      expect(result.violations).toBe(0);
    }
  });
});
