import { LockAcquireTimeoutError, LockManager, LockService, type AcquireOptions } from '@app/distributed-lock';
import { subjectNamed } from '../contract/subjects';
import { startAppProcess, stopAppProcess } from './app-process';
import { contendUntil } from './contend-loops';
import { FencedResource } from './fenced-resource';
import { startHolder } from './holder-process';
import { expectCleanHistory, newHistory } from './history/expect-clean-history';
import { recordedWithLock } from './history/recorded-section';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A separate process holds `key` (watchdog running), is killed with SIGKILL, and the lock must come free
 * by the backend's own means (lease, session, connection) within `freeWithinMs`, with a higher fencing
 * token where the strategy has them.
 */
export async function expectKilledHolderFreed(subject: string, key: string, options: { holderTtlMs: number; busyWaitMs: number; freeWithinMs: number }): Promise<void> {
  // Our side first: a subject that needs shared settings (the SQLite file) puts them in the environment.
  const manager = new LockManager(await subjectNamed(subject).create());
  const locks = new LockService(manager);
  const history = newHistory(`killed holder ${subject}`);
  const holder = await startHolder(subject, key, options.holderTtlMs, { historyFile: history.file });
  try {
    // While the holder lives, nobody else gets in.
    await expect(locks.acquire(key, { waitTimeout: options.busyWaitMs })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
    holder.child.kill('SIGKILL');
    await holder.exited;
    const killedAt = Date.now();
    const freedAt = await recordedWithLock(history, 'survivor', locks, key, (lock) => {
      if (holder.fencingToken !== undefined) expect(lock.fencingToken).toBeGreaterThan(holder.fencingToken);
      return Date.now();
    }, { waitTimeout: options.freeWithinMs + 5_000 });
    expect(freedAt - killedAt).toBeLessThan(options.freeWithinMs);
    expectCleanHistory(history, `killed holder: ${subject}`);
  } finally {
    holder.child.kill('SIGKILL');
    await manager.close();
  }
}

/** What contenders saw while servers were being killed. */
export interface ChaosOutcome {
  readonly sections: number;
  readonly violations: number;
  readonly typedFailures: number;
  readonly untyped: unknown[];
  readonly lost: number;
}

/**
 * `contenders` loops (spread over `services`) take `key` until `durationMs` passes, each section
 * checking that nobody else is inside, while `chaos` kills and restarts servers. Failures must be typed
 * library errors; they are counted, and the loops go on. Bounded by `durationMs`.
 */
export async function contendThroughChaos(
  managers: readonly LockManager[],
  key: string,
  options: { contenders: number; durationMs: number; acquire: AcquireOptions; scenario: string },
  chaos: () => Promise<void>,
): Promise<ChaosOutcome> {
  const history = newHistory(options.scenario);
  const services = managers.map((manager) => new LockService(manager));
  let lost = 0;
  for (const manager of managers) manager.events.on('lost', () => (lost += 1));
  const [counts] = await Promise.all([contendUntil(services, history, key, { contenders: options.contenders, stopAt: Date.now() + options.durationMs, acquire: options.acquire, holderPrefix: 'client' }), chaos()]);
  await Promise.all(managers.map((manager) => manager.close().catch(() => undefined)));
  expectCleanHistory(history, options.scenario);
  return { ...counts, lost };
}

/** A contender process that ended without finishing its run (a crash, such as a native abort). */
export interface CrashedContender {
  readonly name: string;
  /** Its exit code or signal (SIGABRT for an abort). */
  readonly exit: string;
  /** The end of what it wrote to stderr (an assertion's text). */
  readonly stderr: string;
}

/** What contender processes saw, and which of them crashed. */
export interface ProcessChaosOutcome extends ChaosOutcome {
  readonly crashed: readonly CrashedContender[];
}

/**
 * `contendThroughChaos` in the deployment's shape: each of `names` is a separate process (`worker`, see
 * `zookeeper-contender.worker.ts`) running `contenders` loops on its own client. Once all of them contend,
 * `chaos` runs. A process that dies (a native abort takes the whole process, not one call) is reported in
 * `crashed` with its signal and stderr (the caller asserts there is none), instead of taking the test
 * runner's worker with it. Bounded: a process still running `durationMs` + 30 s after it started
 * contending is killed and reported.
 */
export async function contendInProcessesThroughChaos(
  worker: string,
  names: readonly string[],
  env: NodeJS.ProcessEnv,
  key: string,
  options: { contenders: number; durationMs: number; scenario: string },
  chaos: () => Promise<void>,
): Promise<ProcessChaosOutcome> {
  const history = newHistory(options.scenario);
  const apps = names.map((name) =>
    startAppProcess(name, worker, { ...env, CONTENDER_NAME: name, CONTENDER_KEY: key, CONTENDERS: String(options.contenders), DURATION_MS: String(options.durationMs), LOCK_HISTORY_FILE: history.file }),
  );
  try {
    await Promise.all(apps.map((app) => app.waitForLine(/^contending$/, 30_000)));
    await chaos();
    await Promise.all(
      apps.map(async (app) => {
        const timer = setTimeout(() => app.child.kill('SIGKILL'), options.durationMs + 30_000);
        await app.exited;
        clearTimeout(timer);
      }),
    );
  } finally {
    await Promise.all(apps.map((app) => stopAppProcess(app, 1_000)));
  }
  const outcome = { sections: 0, violations: 0, typedFailures: 0, untyped: [] as unknown[], lost: 0, crashed: [] as CrashedContender[] };
  for (const app of apps) {
    const done = app.lines.find((line) => line.startsWith('done '));
    if (!done) {
      outcome.crashed.push({ name: app.name, exit: await app.exited, stderr: app.stderrTail().slice(-1_500) });
      continue;
    }
    const counts = JSON.parse(done.slice('done '.length)) as Omit<ChaosOutcome, 'untyped'> & { untyped: string[] };
    outcome.sections += counts.sections;
    outcome.violations += counts.violations;
    outcome.typedFailures += counts.typedFailures;
    outcome.lost += counts.lost;
    outcome.untyped.push(...counts.untyped.map((error) => `${app.name}: ${error}`));
  }
  // A crash is the failure to report: the history of a run with a dead contender (a hold it never ended)
  // is checked only once no contender crashed.
  if (outcome.crashed.length === 0) expectCleanHistory(history, options.scenario);
  return outcome;
}

/**
 * A separate process holds `key` with fencing, writes once to a fenced resource, and is frozen with
 * SIGSTOP past its lease. Another holder must get the lock meanwhile (higher token) and write; once the
 * frozen holder is resumed, its lock signal must abort and its write with the old token be refused.
 */
export async function expectPausedHolderFenced(subject: string, key: string, options: { holderTtlMs: number; takeoverWithinMs: number }): Promise<void> {
  const resource = new FencedResource();
  await resource.reset(key);
  // Our side first: a subject that needs shared settings (the SQLite file) puts them in the environment
  // the holder process inherits.
  const manager = new LockManager(await subjectNamed(subject).create());
  const locks = new LockService(manager);
  const history = newHistory(`paused holder ${subject}`);
  const holder = await startHolder(subject, key, options.holderTtlMs, { fencedResource: key, historyFile: history.file });
  const pid = holder.child.pid as number;
  try {
    await holder.waitForLine(/^write accepted/, 10_000);
    process.kill(pid, 'SIGSTOP');
    const pausedAt = Date.now();
    const lock = await locks.acquire(key, { waitTimeout: options.takeoverWithinMs });
    const hold = history.begin('new-holder', lock);
    // The lease (or session) ran out: the frozen holder did not keep others out for ever.
    expect(Date.now() - pausedAt).toBeGreaterThanOrEqual(options.holderTtlMs * 0.5);
    expect(lock.fencingToken).toBeGreaterThan(holder.fencingToken as number);
    const seq = await resource.writeNumbered(key, lock.fencingToken as number, 'new-holder');
    expect(seq).toBeDefined();
    history.write(key, lock.fencingToken as number, seq as number);

    process.kill(pid, 'SIGCONT');
    // It learns at once that it lost the lock…
    await holder.waitForLine(/^lost /, 5_000);
    // …and a write it makes anyway is refused by the fencing check.
    holder.send('write');
    await holder.waitForLine(/^write rejected aborted=true/, 5_000);
    expect(await resource.read(key)).toEqual({ token: lock.fencingToken, writer: 'new-holder' });
    hold.sectionEnded();
    await lock.release();
    hold.outcome('resolved');
    // The frozen holder is recorded as one that never ended its hold (it is killed below): what the
    // checker holds it to is that no write of its was accepted after the new holder's.
    expectCleanHistory(history, `paused holder: ${subject}`);
  } finally {
    holder.child.kill('SIGCONT');
    holder.child.kill('SIGKILL');
    await manager.close();
    await resource.close();
  }
}
