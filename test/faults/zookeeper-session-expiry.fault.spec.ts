import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { ZooKeeperLockClient } from '@app/distributed-lock/strategies/zookeeper/zookeeper-client.type';
import { ZooKeeperSession } from '@app/distributed-lock/strategies/zookeeper/zookeeper-session';
import { LeaderElection, LockManager, LockService } from '@app/distributed-lock';
import { ZooKeeperLockStrategy } from '@app/distributed-lock/strategies/zookeeper';
import { zkLockPath, zkSemaphorePath } from '@app/distributed-lock/strategies/zookeeper/zookeeper-paths';
import type { TestContext } from 'vitest';
import { startAppProcess, stopAppProcess, type AppProcess } from '../support/app-process';

const run = randomUUID().slice(0, 8);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const WORKER = join(__dirname, '..', 'support', 'zookeeper-frozen.worker.ts');

/**
 * An application process frozen with SIGSTOP for longer than its ZooKeeper session (a long GC pause, a VM
 * stalled, a laptop lid): the server expires the session while the process cannot see it. Whatever the
 * process held or waited for under that session is gone; on waking it must say so at once (a holder, a
 * leader) or queue again under a new session (a waiter), never act on the old session nor fail on it.
 * The shared standalone ZooKeeper (tickTime 500 ms: 4 s is a valid session timeout); nothing here stops or
 * freezes the server, only the application processes.
 */
const SESSION_TIMEOUT_MS = 4_000;
/** Past the session: the server has expired it (and let another holder in) well before the process wakes. */
const FREEZE_MS = 6_000;

// The tests run at once (about 7 s each): each freezes only processes of its own, on keys of its own.
describe.concurrent('ZooKeeper: a process frozen past its session (SIGSTOP)', () => {
  let connect: string;
  let adminSession: ZooKeeperSession | undefined;
  let admin: ZooKeeperLockClient;

  /** A test's own lock services and application processes, stopped when it ends. */
  const scope = (onTestFinished: TestContext['onTestFinished']) => {
    const apps: AppProcess[] = [];
    const managers: LockManager[] = [];
    onTestFinished(async () => {
      await Promise.allSettled(apps.map((app) => stopAppProcess(app, 2_000)));
      await Promise.allSettled(managers.map((created) => created.close()));
    }, 20_000);
    return {
      manager: (): LockService => {
        const created = new LockManager(new ZooKeeperLockStrategy({ connect, sessionTimeout: SESSION_TIMEOUT_MS }), { operationTimeout: 2_000 });
        managers.push(created);
        return new LockService(created);
      },
      start: (mode: string, key: string, extra: NodeJS.ProcessEnv = {}): AppProcess => {
        const app = startAppProcess(`zk-${mode}`, WORKER, { ZK_CONNECT: connect, ZK_SESSION_TIMEOUT: String(SESSION_TIMEOUT_MS), ZK_MODE: mode, ZK_KEY: key, ...extra });
        apps.push(app);
        return app;
      },
    };
  };
  /** Resolves once `path` has `count` children: the waiter's node is in line behind the holder's. */
  const queued = async (path: string, count: number): Promise<void> => {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const children = await admin.get_children(path, false).catch(() => [] as string[]);
      if (children.length >= count) return;
      if (Date.now() > deadline) throw new Error(`${path} has ${children.length} children, expected ${count}`);
      await sleep(50);
    }
  };
  const freeze = (app: AppProcess): void => void process.kill(app.child.pid as number, 'SIGSTOP');
  const wake = (app: AppProcess): void => void process.kill(app.child.pid as number, 'SIGCONT');

  beforeAll(async () => {
    connect = process.env.LOCK_TEST_ZOOKEEPER as string;
    expect(connect).toBeTruthy();
    adminSession = new ZooKeeperSession({ connect }, 'zookeeper-admin', 10_000);
    admin = await adminSession.client();
  });

  afterAll(async () => {
    await adminSession?.close();
  });

  for (const kind of ['lock', 'permit'] as const) {
    it(`a ${kind} waiter whose session expired while it was frozen queues again and gets the ${kind} freed meanwhile, within its waitTimeout`, async ({ onTestFinished }) => {
      const { manager, start } = scope(onTestFinished);
      const key = `fault:${run}:zk-frozen-${kind}-waiter`;
      const locks = manager();
      const holder = kind === 'lock' ? await locks.acquire(key, { ttl: 30_000 }) : await locks.acquirePermit(key, { permits: 1, ttl: 30_000 });
      const waiter = start(kind === 'lock' ? 'wait' : 'wait-permit', key, { ZK_WAIT_TIMEOUT: '15000' });
      await waiter.waitForLine(/^waiting$/, 20_000);
      await queued(kind === 'lock' ? zkLockPath('/dlock', key) : zkSemaphorePath('/dlock', key), 2);
      freeze(waiter);
      // The holder leaves early in the freeze: the waiter's session is still alive then, so the server
      // tells it (a notification it reads only on waking, after its session has expired).
      await sleep(1_000);
      expect(await holder.release()).toBe(true);
      await sleep(FREEZE_MS - 1_000);
      wake(waiter);
      // Nobody holds the key: the waiter, told its queue node is gone with its session, queues again under
      // a new one and gets it, rather than waiting out its 15 s for a release that already happened.
      const outcome = await waiter.waitForLine(/^(acquired|failed) /, 20_000);
      process.stdout.write(`zookeeper frozen ${kind} waiter: ${waiter.lines.join(' | ')}\n`);
      expect(outcome).toMatch(/^acquired \d+/);
      expect(Number(/^acquired (\d+)/.exec(outcome)?.[1])).toBeGreaterThan(holder.fencingToken as number);
    }, 60_000);
  }

  it('a holder frozen past its session reads its lock lost on waking; the release resolves, and its next call gets a new session', async ({ onTestFinished }) => {
    const { manager, start } = scope(onTestFinished);
    const key = `fault:${run}:zk-frozen-holder`;
    const holder = start('hold', key);
    const held = await holder.waitForLine(/^held \d+$/, 20_000);
    const locks = manager();
    freeze(holder);
    const frozenAt = Date.now();
    // The server expires the frozen holder's session after 4 s and lets us in.
    const next = await locks.acquire(key, { ttl: 10_000, waitTimeout: 10_000 });
    expect(next.fencingToken).toBeGreaterThan(Number(held.split(' ')[1]));
    await sleep(Math.max(0, FREEZE_MS - (Date.now() - frozenAt)));
    wake(holder);
    // The holder's first read on waking: its session is known to be gone, so is its lock (before any
    // timer of the library could have run: the loss is checked when it is read).
    const read = await holder.waitForLine(/^read /, 10_000);
    const released = await holder.waitForLine(/^release /, 10_000);
    const tried = await holder.waitForLine(/^try /, 10_000);
    process.stdout.write(`zookeeper frozen holder: ${holder.lines.join(' | ')}\n`);
    expect(read).toBe('read held=false aborted=true');
    // The release says the lock was not held (a LockLostError on the signal), rather than failing on the
    // closed session; the next call waits for the new session instead of failing on the old one.
    expect(released).toBe('release resolved false reason=session-ended');
    expect(tried).toBe('try held');
    expect(next.isHeld).toBe(true);
    await next.release();
  }, 60_000);

  it('a candidate whose session expired while it was frozen in line campaigns again and leads once the leader left, within its campaign round', async ({ onTestFinished }) => {
    const { manager, start } = scope(onTestFinished);
    const name = `fault-${run}-zk-frozen-candidate`;
    const election = new LeaderElection(manager(), { name });
    election.start();
    let closed = false;
    try {
      await election.waitForLeadership({ timeout: 10_000 });
      const term = election.term as number;
      const candidate = start('campaign', name);
      await candidate.waitForLine(/^waiting$/, 20_000);
      await queued(zkLockPath('/dlock', `leader:${name}`), 2);
      freeze(candidate);
      // The leader steps down early in the freeze (its process ends): the candidate, next in line, is told
      // while its session still lives, but reads that only on waking, after the session expired.
      await sleep(1_000);
      await election.close();
      closed = true;
      await sleep(FREEZE_MS - 1_000);
      wake(candidate);
      // It queues again under a new session, alone in line: it leads now, not when its campaign round
      // (60 s) would have ended. The election is leaderless from the resignation to here.
      const led = await candidate.waitForLine(/^leader \d+ \d+$/, 20_000);
      process.stdout.write(`zookeeper frozen candidate: ${candidate.lines.join(' | ')}\n`);
      expect(Number(led.split(' ')[1])).toBeGreaterThan(term);
    } finally {
      if (!closed) await election.close();
    }
  }, 60_000);

  it('a leader frozen past its session reads isLeader false on waking, with an election ttl (the default 10 s) above the session timeout', async ({ onTestFinished }) => {
    const { manager, start } = scope(onTestFinished);
    const name = `fault-${run}-zk-frozen-leader`;
    const leader = start('lead', name);
    const term = Number((await leader.waitForLine(/^leader \d+$/, 20_000)).split(' ')[1]);
    const election = new LeaderElection(manager(), { name });
    election.start();
    try {
      freeze(leader);
      const frozenAt = Date.now();
      await election.waitForLeadership({ timeout: 10_000 });
      expect(election.term).toBeGreaterThan(term);
      await sleep(Math.max(500, FREEZE_MS + 500 - (Date.now() - frozenAt)));
      wake(leader);
      // The old leader's lease (10 s) has not ended on its clock, but its session has: it no longer leads.
      const read = await leader.waitForLine(/^read /, 10_000);
      process.stdout.write(`zookeeper frozen leader: ${leader.lines.join(' | ')}\n`);
      expect(read).toBe('read leader=false');
      expect(election.isLeader).toBe(true);
    } finally {
      await election.close();
    }
  }, 60_000);
});
