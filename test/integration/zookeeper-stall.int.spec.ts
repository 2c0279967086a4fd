import { randomUUID } from 'node:crypto';
import { LockLostError, LockManager, LockService } from '@app/distributed-lock';
import { ZooKeeperLockStrategy } from '@app/distributed-lock/strategies/zookeeper';

// A process whose event loop stalls past its ZooKeeper session (a long synchronous section, a GC pause):
// the server expires the session, deletes its nodes, sends the watch events of that deletion and closes the
// connection. On waking, the process reads those events before any timer of the library runs. The holder
// must hear why it lost its lock: its session ended. A frozen process (SIGSTOP) is in
// test/faults/zookeeper-session-expiry.fault.spec.ts; here the stall is this worker's own, on the shared server.

const run = randomUUID().slice(0, 8);
const SESSION_TIMEOUT_MS = 4_000;
/** Past the session: the server has expired it (tickTime 500 ms) before the stall ends. */
const STALL_MS = 6_000;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const managers: LockManager[] = [];
afterAll(async () => {
  await Promise.all(managers.map((manager) => manager.close()));
});

/** Blocks this thread inside a timer's callback: when it returns, the loop's clock is still the old one. */
const stallInTimer = (ms: number): Promise<void> =>
  new Promise((resolve) =>
    setTimeout(() => {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
      resolve();
    }, 0),
  );

describe('ZooKeeper: a holder whose event loop stalled past its session', () => {
  for (const kind of ['lock', 'permit'] as const) {
    it(`is told its session ended, also when the deletion of its ${kind} node is the first thing it reads`, async () => {
      const manager = new LockManager(new ZooKeeperLockStrategy({ connect: process.env.LOCK_TEST_ZOOKEEPER as string, sessionTimeout: SESSION_TIMEOUT_MS }), { operationTimeout: 2_000 });
      managers.push(manager);
      const locks = new LockService(manager);
      const key = `stall:${run}:${kind}`;
      const held = kind === 'lock' ? await locks.acquire(key, { ttl: 30_000 }) : await locks.acquirePermit(key, { permits: 1, ttl: 30_000 });
      // The watch on a lock's node is set a little after the grant (a lock that was free is watched late).
      await sleep(300);
      const signal = held.signal;
      const told = new Promise<unknown>((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));
      // No timer of the library is due when the stall ends (the loop's clock did not move), so the socket
      // is read first: the deletion of our node, then the closed connection.
      await stallInTimer(STALL_MS);
      const reason = await told;
      expect(reason).toBeInstanceOf(LockLostError);
      expect((reason as LockLostError).reason).toBe('session-ended');
      expect(await held.release()).toBe(false);
    }, 30_000);
  }
});
