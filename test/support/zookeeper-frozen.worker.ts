// One application instance on ZooKeeper, to be frozen with SIGSTOP past its session by
// test/faults/zookeeper-session-expiry.fault.spec.ts. Environment: ZK_CONNECT, ZK_SESSION_TIMEOUT, ZK_KEY, and
// ZK_MODE, what it does before the freeze:
//   hold         holds ZK_KEY (ttl 2 s, extended by the watchdog); prints "held <token>";
//   wait         waits for ZK_KEY (waitTimeout ZK_WAIT_TIMEOUT); prints "waiting", then "acquired <token>" or
//                "failed <error name>: <message>";
//   wait-permit  the same for one permit of ZK_KEY (permits: 1);
//   lead         campaigns in the election ZK_KEY (the default ttl); prints "leader <term>";
//   campaign     the same, for a candidate that waits in line: also "leader <term> <ms since it woke>"
//                once it leads after a freeze.
// A timer every 20 ms notices the freeze: the first of its ticks after a gap is the earliest the process can
// act on waking (it was due before any timer of the library). It prints "woke <gap ms>" and, holding a lock,
// what the holder reads then: "read held=<isHeld> aborted=<signal.aborted>" (a leader: "read leader=<isLeader>"),
// then what a release and a try of another key give: "release resolved <bool> reason=<LockLostError reason|none>"
// or "release rejected <name>: <message>", and "try held|free-null|rejected <name>: <message>".
import { LeaderElection, LockLostError, LockManager, LockService, type LockHandle } from './without-nest';
import { ZooKeeperLockStrategy } from '@app/distributed-lock/strategies/zookeeper';

const say = (line: string): void => void process.stdout.write(`${line}\n`);
const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const describeError = (error: unknown): string => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));

/** Calls `woke` once at the first tick after a gap of over 1.5 s (a freeze), with the gap. */
function onWake(woke: (gapMs: number) => void): void {
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    const gap = now - last;
    last = now;
    if (gap < 1_500) return;
    clearInterval(timer);
    woke(Math.round(gap));
  }, 20);
}

/** What a holder that just woke up does with its lock: reads it, releases it, and tries another key. */
function afterWaking(locks: LockService, lock: LockHandle, key: string): void {
  onWake((gap) => {
    // Read first, before anything else of ours runs: this is the holder acting on what it believes.
    const aborted = lock.signal.aborted;
    const held = lock.isHeld;
    say(`woke ${gap}`);
    say(`read held=${held} aborted=${aborted}`);
    void locks.tryAcquire(`${key}:other`, { ttl: 5_000 }).then(
      async (other) => {
        say(`try ${other ? 'held' : 'free-null'}`);
        await other?.release();
      },
      (error: unknown) => say(`try rejected ${describeError(error)}`),
    );
    lock.release().then(
      (wasHeld) => {
        const reason = lock.signal.reason instanceof LockLostError ? lock.signal.reason.reason : 'none';
        say(`release resolved ${wasHeld} reason=${reason}`);
      },
      (error: unknown) => say(`release rejected ${describeError(error)}`),
    );
  });
}

async function main(): Promise<void> {
  const key = env('ZK_KEY');
  const manager = new LockManager(new ZooKeeperLockStrategy({ connect: env('ZK_CONNECT'), sessionTimeout: Number(env('ZK_SESSION_TIMEOUT')) }), { operationTimeout: 2_000 });
  const locks = new LockService(manager);
  const mode = env('ZK_MODE');
  if (mode === 'hold') {
    const lock = await locks.acquire(key, { ttl: 2_000, autoExtend: true });
    say(`held ${lock.fencingToken}`);
    afterWaking(locks, lock, key);
  } else if (mode === 'wait' || mode === 'wait-permit') {
    onWake((gap) => say(`woke ${gap}`));
    const waitTimeout = Number(env('ZK_WAIT_TIMEOUT'));
    say('waiting');
    const started = Date.now();
    try {
      const held = mode === 'wait' ? await locks.acquire(key, { ttl: 5_000, waitTimeout }) : await locks.acquirePermit(key, { permits: 1, ttl: 5_000, waitTimeout });
      say(`acquired ${held.fencingToken} after ${Date.now() - started}`);
      await held.release();
    } catch (error) {
      say(`failed ${describeError(error)} after ${Date.now() - started}`);
    }
  } else if (mode === 'lead') {
    const election = new LeaderElection(locks, { name: key });
    election.events.on('gained', ({ term }) => {
      say(`leader ${term}`);
      onWake((gap) => {
        const leader = election.isLeader;
        say(`woke ${gap}`);
        say(`read leader=${leader}`);
      });
    });
    election.start();
  } else if (mode === 'campaign') {
    const election = new LeaderElection(locks, { name: key });
    let wokeAt: number | undefined;
    onWake((gap) => {
      wokeAt = performance.now();
      say(`woke ${gap}`);
    });
    election.events.on('gained', ({ term }) => say(`leader ${term}${wokeAt === undefined ? '' : ` ${Math.round(performance.now() - wokeAt)}`}`));
    election.start();
    say('waiting');
  } else {
    throw new Error(`unknown ZK_MODE ${mode}`);
  }
  // Bounded: a worker nobody stops ends by itself.
  setTimeout(() => process.exit(0), 60_000).unref();
  await new Promise((resolve) => setTimeout(resolve, 60_000));
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
