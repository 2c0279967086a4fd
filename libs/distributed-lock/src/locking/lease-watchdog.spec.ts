import { DeadlineClock } from './deadline-clock';
import { LeaseWatchdog } from './lease-watchdog';

// The watchdog only reads setTimeout, clearTimeout and Date.now: on a fake clock each step is exact, so the
// assertions below hold to the millisecond and a stalled event loop (a loaded CI machine) cannot move a timer
// past a lease's end. On real timers a 100 ms stall expired the 90 ms lease of the first case.
beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

/** Moves the fake clock on, running every timer due and the promise callbacks they start. */
const advance = (ms: number): Promise<void> => vi.advanceTimersByTimeAsync(ms).then(() => undefined);

describe('LeaseWatchdog', () => {
  it('renews at its interval while renewals succeed', async () => {
    let expiresAt = Date.now() + 90;
    let renewals = 0;
    const gone: string[] = [];
    const dog = new LeaseWatchdog(
      {
        expiresAt: () => expiresAt,
        renew: async () => {
          renewals += 1;
          expiresAt = Date.now() + 90;
          return true;
        },
        onGone: (reason) => gone.push(reason),
        onRenewFailed: () => undefined,
      },
      30,
      90, new DeadlineClock(),
    );
    dog.start();
    await advance(250);
    dog.stop();
    expect(renewals).toBeGreaterThanOrEqual(3);
    expect(renewals).toBe(8); // at 30, 60, … 240 ms: one per interval
    expect(gone).toEqual([]);
  });

  it('reports a refused renewal at once', async () => {
    const gone: string[] = [];
    const dog = new LeaseWatchdog(
      { expiresAt: () => Date.now() + 1000, renew: async () => false, onGone: (reason) => gone.push(reason), onRenewFailed: () => undefined },
      10,
      1000, new DeadlineClock(),
    );
    dog.start();
    await advance(10); // the first renewal, at the interval
    expect(gone).toEqual(['extension-refused']);
    await advance(50);
    expect(gone).toEqual(['extension-refused']);
  });

  it('retries failed renewals and gives up once the lease has run out', async () => {
    const expiresAt = Date.now() + 120;
    const failures: unknown[] = [];
    const gone: string[] = [];
    const dog = new LeaseWatchdog(
      {
        expiresAt: () => expiresAt,
        renew: async () => {
          throw new Error('down');
        },
        onGone: (reason) => gone.push(reason),
        onRenewFailed: (error) => failures.push(error),
      },
      40,
      120, new DeadlineClock(),
    );
    dog.start();
    await advance(119);
    expect(gone).toEqual([]); // still retrying while the lease has time left
    await advance(400 - 119);
    expect(failures.length).toBeGreaterThanOrEqual(2);
    expect(gone).toEqual(['backend-unreachable']);
  });

  it('without renewal, fires "expired" at the end of the lease, and not before', async () => {
    const gone: string[] = [];
    // A grant with its whole lease (50 ms asked, 60 left: no top-up due).
    const expiresAt = Date.now() + 60;
    let renewals = 0;
    const dog = new LeaseWatchdog(
      {
        expiresAt: () => expiresAt,
        renew: async () => {
          renewals += 1;
          return true;
        },
        onGone: (reason) => gone.push(reason),
        onRenewFailed: () => undefined,
      },
      undefined,
      50, new DeadlineClock(),
    );
    dog.start();
    await advance(30);
    expect(gone).toEqual([]);
    await advance(29); // 1 ms before the end
    expect(gone).toEqual([]);
    await advance(1);
    expect(gone).toEqual(['expired']);
    await advance(90);
    expect(gone).toEqual(['expired']);
    expect(renewals).toBe(0);
  });

  it('renews a grant that has little of its lease left before half of it has passed, not at the interval', async () => {
    // A waiter whose backend lease partly ran while it waited: 100 ms left of a 3 s lease renewed every 1 s.
    let expiresAt = Date.now() + 100;
    const renewedAt: number[] = [];
    const started = Date.now();
    const dog = new LeaseWatchdog(
      {
        expiresAt: () => expiresAt,
        renew: async () => {
          renewedAt.push(Date.now() - started);
          expiresAt = Date.now() + 3_000;
          return true;
        },
        onGone: () => undefined,
        onRenewFailed: () => undefined,
      },
      1_000,
      3_000, new DeadlineClock(),
    );
    dog.start();
    await advance(150);
    dog.stop();
    expect(renewedAt.length).toBe(1);
    expect(renewedAt[0]).toBeLessThan(100);
    expect(renewedAt[0]).toBeLessThanOrEqual(50); // half of the 100 ms left
  });

  it('tops up once a grant that is much shorter than the lease asked for, also without auto-extension', async () => {
    let expiresAt = Date.now() + 100; // e.g. a hand-over that only reserved the lock for a short claim
    let renewals = 0;
    const gone: string[] = [];
    const dog = new LeaseWatchdog(
      {
        expiresAt: () => expiresAt,
        renew: async () => {
          renewals += 1;
          expiresAt = Date.now() + 150;
          return true;
        },
        onGone: (reason) => gone.push(reason),
        onRenewFailed: () => undefined,
      },
      undefined,
      150, new DeadlineClock(),
    );
    dog.start();
    await advance(80);
    expect(renewals).toBe(1);
    expect(gone).toEqual([]);
    await advance(250);
    expect(renewals).toBe(1);
    expect(gone).toEqual(['expired']);
  });

  it('without auto-extension, reports a lease that ran out while its top-up was unanswered as expired, not the backend unreachable', async () => {
    // An explicit 300 ms lease granted late (260 ms left): one top-up is due. The server answers it after the
    // lease's end, when the lock service's bound on a renewal (the lease's end) has cut it off already.
    const expiresAt = Date.now() + 260;
    const gone: string[] = [];
    const failures: unknown[] = [];
    const dog = new LeaseWatchdog(
      {
        expiresAt: () => expiresAt,
        renew: () => new Promise<boolean>((_resolve, reject) => setTimeout(() => reject(new Error('no answer before the lease ended')), expiresAt - Date.now())),
        onGone: (reason) => gone.push(reason),
        // Nothing the caller asked for failed: no renewal failure (a backgroundError 'extend') either.
        onRenewFailed: (error) => failures.push(error),
      },
      undefined,
      300, new DeadlineClock(),
    );
    dog.start();
    await advance(259);
    expect(gone).toEqual([]);
    await advance(50);
    expect(gone).toEqual(['expired']);
    expect(failures).toEqual([]);
  });

  it('without auto-extension, reports the backend unreachable when the top-up failed before the lease ran out', async () => {
    const expiresAt = Date.now() + 100;
    const gone: string[] = [];
    const dog = new LeaseWatchdog(
      {
        expiresAt: () => expiresAt,
        renew: async () => {
          throw new Error('connection refused');
        },
        onGone: (reason) => gone.push(reason),
        onRenewFailed: () => undefined,
      },
      undefined,
      300, new DeadlineClock(),
    );
    dog.start();
    await advance(400);
    expect(gone).toEqual(['backend-unreachable']);
  });
});
