import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAppProcess, stopAppProcess, type AppProcess } from '../support/app-process';
import { monotonicNow } from '../support/history/hold-history';
import { ScheduledRunLog, type ScheduledRunRecord } from '../support/scheduled/scheduled-run-log';
import { LOCK_AT_LEAST_FOR, LOCK_AT_MOST_FOR } from '../support/scheduled/scheduled-app.config';

const run = randomUUID().slice(0, 8);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const WORKER = join(__dirname, '..', 'support', 'scheduled', 'scheduled-app.worker.ts');
const OFFSET_CLOCK = join(__dirname, '..', 'support', 'scheduled', 'offset-clock.ts');
const SKEW_MS = 400;

/**
 * After its runner is killed, how long the job's lock can keep the others out: the lease
 * (lockAtMostFor; memcached's rounded up to whole seconds, plus the second it may keep an item), ZooKeeper's
 * session timeout (4 s in the subjects), nothing for the pessimistic and advisory locks (their connection
 * closes with the process), nothing for a per-run lock (the next tick has a key of its own).
 */
const FREED_WITHIN: Record<string, number> = {
  redis: LOCK_AT_MOST_FOR,
  redlock: LOCK_AT_MOST_FOR,
  row: LOCK_AT_MOST_FOR,
  sqlite: LOCK_AT_MOST_FOR,
  pessimistic: 0,
  zookeeper: 4_000,
  etcd: LOCK_AT_MOST_FOR,
  'row-postgres': LOCK_AT_MOST_FOR,
  'pessimistic-postgres': 0,
  'advisory-postgres': 0,
  'advisory-mysql': 0,
  memcached: Math.ceil(LOCK_AT_MOST_FOR / 1_000) * 1_000 + 1_000,
  'redis-per-run': 0,
};
/**
 * Where the lock goes with the crashed runner's connection (the pessimistic and advisory locks), the tick it
 * was running, or had run but still kept by lockAtLeastFor, may run again on an instance whose timer fires later:
 * lockAtLeastFor cannot outlive the process there (docs/scheduled-jobs.md says so).
 */
const CRASH_FREES_AT_ONCE = new Set(['pessimistic', 'pessimistic-postgres', 'advisory-postgres', 'advisory-mysql']);
/** How many runs the victim is inside when it is killed (of 14 jobs; at least 5 must die inside). */
const KILL_INSIDE_RUNS = 6;
/** Only runs started this recently count: each lasts 250 ms, so they cannot end before the kill. */
const RECENT_MS = 150;
/** One tick, the scheduler's timer, and a loaded machine: added to every bound. */
const SLACK_MS = 1_500;

/**
 * The first of `apps` that is inside `runs` runs it started less than RECENT_MS ago, by the run log (a run's
 * start is written before it begins, its end when it ends). Killed at once, it dies inside them: a run lasts
 * 250 ms, so none of them can end in the moment between this look and the kill. A fixed delay after one job's
 * start found only 4 still running once (CI of stop 57); counting starts alone could count runs that had
 * ended under a slow look.
 */
async function firstInsideRuns(apps: readonly AppProcess[], log: string, runs: number, timeoutMs: number): Promise<AppProcess> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const since = BigInt(monotonicNow()) - BigInt(RECENT_MS) * 1_000_000n;
    const open = ScheduledRunLog.read(log).filter((run) => run.until === undefined && BigInt(run.from) > since);
    const found = apps.find((app) => open.filter((run) => run.instance === app.name).length >= runs);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`no app was inside ${runs} runs started in the last ${RECENT_MS} ms within ${timeoutMs} ms`);
    await sleep(5);
  }
}

function countByTick(runs: readonly ScheduledRunRecord[]): Map<number, ScheduledRunRecord[]> {
  const ticks = new Map<number, ScheduledRunRecord[]>();
  for (const r of runs) ticks.set(r.tick, [...(ticks.get(r.tick) ?? []), r]);
  return ticks;
}

/**
 * The acceptance run: three real app processes (one importing ScheduleModule first, one
 * DistributedLockModule first; half the jobs with each decorator order), a 1 s cron per strategy, one
 * process with its clock 400 ms ahead, and the process running the jobs killed in the middle of its runs. One set of
 * processes serves every strategy at once (a job per strategy), so the run lasts 20 s in all.
 */
describe('Scheduled jobs across three app processes, every strategy at once', () => {
  it('runs every tick exactly once, moves a killed runner\'s job within its lease, and lockAtLeastFor absorbs a skewed clock', async () => {
    const log = join(tmpdir(), `scheduled-runs-${run}.jsonl`);
    writeFileSync(log, '');
    process.env.LOCK_TEST_SQLITE_PATH ??= join(tmpdir(), `scheduled-${run}.sqlite`);
    const env = (instance: string, scheduleFirst: boolean): NodeJS.ProcessEnv => ({
      INSTANCE: instance,
      SCHEDULED_RUN: run,
      SCHEDULED_RUN_LOG: log,
      SCHEDULE_FIRST: scheduleFirst ? '1' : '0',
    });
    // The skewed one first: it takes every job's lock, and keeps them (it fires first, and each fire of the
    // others falls inside its lockAtLeastFor), so that the kill below hits every job.
    const apps: AppProcess[] = [startAppProcess('skewed', WORKER, { ...env('skewed', true), CLOCK_OFFSET_MS: String(SKEW_MS) }, [OFFSET_CLOCK])];
    try {
      await apps[0].waitForLine(/^run redis /, 60_000);
      apps.push(startAppProcess('a', WORKER, env('a', true)), startAppProcess('b', WORKER, env('b', false)));
      await Promise.all(apps.map((app) => app.waitForLine(/^ready$/, 60_000)));
      // The window in which all three run: from the second full tick after all are up.
      const windowStart = Math.ceil(Date.now() / 1_000) * 1_000 + 2_000;
      await sleep(windowStart - Date.now() + 9_000);
      // Kill the instance that runs the jobs now (whoever took the locks first keeps winning: each fire of
      // the others falls inside its lockAtLeastFor), once it is inside most of this tick's runs.
      const victim = await firstInsideRuns(apps, log, KILL_INSIDE_RUNS, 5_000);
      victim.child.kill('SIGKILL');
      const killedAt = BigInt(monotonicNow());
      const killedWall = Date.now();
      await victim.exited;
      await sleep(10_000);
      const windowEnd = Date.now() - SLACK_MS;
      await Promise.all(apps.map((app) => stopAppProcess(app)));

      const runs = ScheduledRunLog.read(log);
      const diedInside = new Set(runs.filter((r) => r.instance === victim.name && r.until === undefined).map((r) => r.job));
      expect(diedInside.size).toBeGreaterThanOrEqual(5);
      for (const job of Object.keys(FREED_WITHIN)) {
        const ofJob = runs.filter((r) => r.job === job);
        const ticks = countByTick(ofJob);
        // Never twice, whoever ran it, skewed clock or not; but where the crash freed the lock, a run of the
        // victim's that held it at the kill (running, or kept by lockAtLeastFor) may run again after it.
        const heldAtKill = (r: ScheduledRunRecord): boolean =>
          r.instance === victim.name && (r.until === undefined || killedAt < BigInt(r.from) + BigInt(LOCK_AT_LEAST_FOR) * 1_000_000n);
        const rerunOfCrashed = (list: readonly ScheduledRunRecord[]): boolean =>
          CRASH_FREES_AT_ONCE.has(job) && list.length === 2 && list.some(heldAtKill) && list.some((r) => r.instance !== victim.name && BigInt(r.from) > killedAt);
        const twice = [...ticks].filter(([, list]) => list.length > 1 && !rerunOfCrashed(list));
        expect(twice.map(([tick, list]) => `${job} ${tick}: ${list.map((r) => r.instance).join(',')}`)).toEqual([]);
        // Every tick while all three ran, and every tick once the killed runner's lock was free again.
        const freedBy = killedWall + FREED_WITHIN[job] + SLACK_MS;
        const expected: number[] = [];
        for (let tick = windowStart; tick <= windowEnd; tick += 1_000) {
          if (tick < killedWall - SLACK_MS || tick > freedBy + SLACK_MS) expected.push(tick);
        }
        const missing = expected.filter((tick) => !ticks.has(tick));
        expect(missing.map((tick) => `${job} ${new Date(tick).toISOString()}`)).toEqual([]);
        // The job moved: the first run after the kill was elsewhere, within the bound.
        if (diedInside.has(job)) {
          const next = ofJob.filter((r) => BigInt(r.from) > killedAt).sort((x, y) => (BigInt(x.from) < BigInt(y.from) ? -1 : 1))[0];
          expect(next?.instance).not.toBe(victim.name);
          const movedAfterMs = Number((BigInt(next.from) - killedAt) / 1_000_000n);
          expect(movedAfterMs, `${job} moved after ${movedAfterMs} ms`).toBeLessThanOrEqual(FREED_WITHIN[job] + SLACK_MS);
        }
      }
      // The skew is real: without lockAtLeastFor the skewed instance ran each tick, and another ran it again
      // 400 ms later (its lock was free by then).
      const control = countByTick(runs.filter((r) => r.job === 'control'));
      const doubled = [...control].filter(([tick, list]) => tick >= windowStart && tick < killedWall - SLACK_MS && list.length > 1);
      expect(doubled.length).toBeGreaterThanOrEqual(5);
      expect(doubled.every(([, list]) => list.some((r) => r.instance === 'skewed'))).toBe(true);
    } finally {
      await Promise.all(apps.map((app) => stopAppProcess(app)));
    }
  }, 150_000);
});
