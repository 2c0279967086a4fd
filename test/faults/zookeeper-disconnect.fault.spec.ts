import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { LockLostError, LockManager, LockService } from '@app/distributed-lock';
import { ZooKeeperLockStrategy } from '@app/distributed-lock/strategies/zookeeper';
import { faults } from '../../scripts/services';
import { expectCleanHistory, newHistory } from '../support/history/expect-clean-history';
import { waitUntil } from '../../scripts/services/probes';
import { zookeeperArgs, zookeeperKind } from '../../scripts/services/server-kinds';
import { launch, stopProcess } from '../../scripts/services/server-process';
import { instancesRoot, readRecord, removeRecord, type ServerRecord } from '../../scripts/services/service-state';
import { freePort } from '../support/free-port';

const run = randomUUID().slice(0, 8);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The server this suite freezes is its own: a standalone ZooKeeper (tickTime 500 ms, so 4 s is a valid
 * session timeout) on a free loopback port. The shared servers (12181, the zookeeper3 ensembles) are used
 * by other suites, which a frozen server would stall. It is recorded like any other server, so that
 * `faults.pause` finds it and an interrupted run's exit handler kills it.
 */
const SERVER = 'zookeeper-disconnect-faults';

/** The session timeout the holder asks for, and gets (2–20 ticks of 500 ms). */
const SESSION_TIMEOUT_MS = 4_000;

async function stopServer(): Promise<void> {
  const record = readRecord(SERVER);
  if (!record) return;
  await stopProcess(record); // SIGCONTs a paused server before stopping it
  removeRecord(SERVER);
  rmSync(record.dir, { recursive: true, force: true });
}

async function startServer(): Promise<string> {
  await stopServer(); // what an interrupted earlier run left behind
  const port = await freePort();
  const dir = join(instancesRoot(), SERVER);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const record: ServerRecord = { name: SERVER, topology: SERVER, command: 'java', args: zookeeperArgs(dir), cwd: dir, logFile: join(dir, 'server.log'), ports: [port], dir, pid: 0 };
  await zookeeperKind.prepare?.(record, [record]);
  launch(record);
  await waitUntil(`${SERVER} (log: ${record.logFile})`, () => zookeeperKind.ready(record), zookeeperKind.startTimeoutMs);
  return `127.0.0.1:${port}`;
}

/** When `signal` aborts, or undefined if it does not within `withinMs`. */
async function abortTime(signal: AbortSignal, withinMs: number): Promise<number | undefined> {
  let onAbort: () => void = () => undefined;
  const aborted = new Promise<number>((resolve) => {
    onAbort = () => resolve(Date.now());
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([aborted, sleep(withinMs).then(() => undefined)]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/**
 * The promise (README, docs/strategies/zookeeper.md): a holder cut off at time c is told between about
 * c + 0.65 × and c + 0.9 × the session timeout, so before the server could expire its session and let
 * another in. 300 ms of room either side for the timers of a loaded machine (a late probe moves the lower
 * end), never reaching the timeout itself.
 */
function expectToldAsPromised(toldAfterMs: number | undefined): void {
  expect(toldAfterMs).toBeDefined();
  expect(toldAfterMs).toBeGreaterThanOrEqual(SESSION_TIMEOUT_MS * 0.65 - 300);
  expect(toldAfterMs).toBeLessThan(Math.min(SESSION_TIMEOUT_MS * 0.9 + 300, SESSION_TIMEOUT_MS));
}

describe('ZooKeeper: a holder cut off from the server', () => {
  let connect: string;

  beforeAll(async () => {
    connect = await startServer();
  }, 70_000);

  afterAll(async () => {
    await stopServer();
  }, 30_000);

  it('is told its lock is lost within the session timeout, and the lock is free once the server is back', async () => {
    const key = `fault:${run}:zk-cut-off`;
    const holder = new LockManager(new ZooKeeperLockStrategy({ connect, sessionTimeout: SESSION_TIMEOUT_MS }), { operationTimeout: 2_000 });
    const other = new LockManager(new ZooKeeperLockStrategy({ connect, sessionTimeout: SESSION_TIMEOUT_MS }), { operationTimeout: 2_000 });
    let resumed = false;
    const history = newHistory('zookeeper holder cut off from the server');
    try {
      // A lease far longer than the test: only the end of the holder's session can take the lock away.
      const lock = await new LockService(holder).acquire(key, { ttl: 60_000 });
      const cutOff = history.begin('cut-off', lock);
      expect(faults.pause(SERVER)).toBe(true);
      const frozenAt = Date.now();
      // The server stops answering; the session ends on the server one session timeout after it last
      // heard from the holder, which is at most a moment before the freeze. The holder must be told by then
      // (never later), and not at once: the session may well survive a cut shorter than its timeout.
      const abortedAt = await abortTime(lock.signal, SESSION_TIMEOUT_MS + 3_000);
      const toldAfterMs = abortedAt === undefined ? undefined : abortedAt - frozenAt;
      process.stdout.write(`zookeeper cut-off holder told after ${toldAfterMs ?? 'never (within the bound)'} ms (session timeout ${SESSION_TIMEOUT_MS} ms)\n`);
      expectToldAsPromised(toldAfterMs);
      expect(lock.signal.reason).toBeInstanceOf(LockLostError);
      expect((lock.signal.reason as LockLostError).reason).toBe('session-ended');
      expect(lock.isHeld).toBe(false);

      // Back at once, before the server expired the old session; and the server may hear from its old
      // connection once more as it wakes, which keeps the session (and the holder's node) one more session
      // timeout. That node must not keep the lock from others, since its holder was told it lost it: it is
      // deleted as soon as the server answers again, well within that session timeout.
      expect(faults.resume(SERVER)).toBe(true);
      resumed = true;
      const resumedAt = Date.now();
      const next = await new LockService(other).acquire(key, { ttl: 10_000, waitTimeout: SESSION_TIMEOUT_MS / 2 });
      const nextHold = history.begin('other', next);
      process.stdout.write(`zookeeper cut-off lock taken by another client ${Date.now() - resumedAt} ms after the server was back\n`);
      expect(next.fencingToken).toBeGreaterThan(lock.fencingToken as number);
      nextHold.sectionEnded();
      expect(await next.release()).toBe(true);
      nextHold.outcome('resolved');
      // The cut-off holder acts as the holder until here; it was told in time, so the overlap is allowed.
      cutOff.sectionEnded();
      expect(await lock.release()).toBe(false);
      cutOff.outcome('LockLostError');
      expectCleanHistory(history, 'zookeeper holder cut off from the server');
    } finally {
      if (!resumed) faults.resume(SERVER);
      // A failed close must not hide the failure that brought us here.
      await Promise.allSettled([holder.close(), other.close()]);
    }
  }, 40_000);

  it('tells a permit holder its permit is lost within the session timeout, and the place is free once the server is back', async () => {
    const key = `fault:${run}:zk-permit-cut-off`;
    const holder = new LockManager(new ZooKeeperLockStrategy({ connect, sessionTimeout: SESSION_TIMEOUT_MS }), { operationTimeout: 2_000 });
    const other = new LockManager(new ZooKeeperLockStrategy({ connect, sessionTimeout: SESSION_TIMEOUT_MS }), { operationTimeout: 2_000 });
    let resumed = false;
    try {
      // A lease far longer than the test (its first extension too): only the end of the session can take the permit away.
      const permit = await new LockService(holder).acquirePermit(key, { permits: 1, ttl: 60_000 });
      expect(faults.pause(SERVER)).toBe(true);
      const frozenAt = Date.now();
      const abortedAt = await abortTime(permit.signal, SESSION_TIMEOUT_MS + 3_000);
      const toldAfterMs = abortedAt === undefined ? undefined : abortedAt - frozenAt;
      process.stdout.write(`zookeeper cut-off permit holder told after ${toldAfterMs ?? 'never (within the bound)'} ms (session timeout ${SESSION_TIMEOUT_MS} ms)\n`);
      expectToldAsPromised(toldAfterMs);
      expect(permit.signal.reason).toBeInstanceOf(LockLostError);
      expect((permit.signal.reason as LockLostError).reason).toBe('session-ended');
      expect(permit.isHeld).toBe(false);
      // The holder was told: its node, which the server may keep one more session timeout, must not keep
      // the place from others once the server answers again.
      expect(faults.resume(SERVER)).toBe(true);
      resumed = true;
      const next = await new LockService(other).acquirePermit(key, { permits: 1, ttl: 10_000, waitTimeout: SESSION_TIMEOUT_MS / 2 });
      expect(next.fencingToken).toBeGreaterThan(permit.fencingToken as number);
      expect(await next.release()).toBe(true);
      expect(await permit.release()).toBe(false);
    } finally {
      if (!resumed) faults.resume(SERVER);
      await Promise.allSettled([holder.close(), other.close()]);
    }
  }, 40_000);
});
