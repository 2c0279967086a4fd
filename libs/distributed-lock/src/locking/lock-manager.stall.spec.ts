import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import type { LeaseGrant, LockRequest } from './lock-lease';
import { LockManager } from './lock-manager';
import type { LockStrategy } from './lock-strategy.interface';
import { LockService } from './lock-service';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Blocks the loop for `ms`, as a frozen process (SIGSTOP, a paused VM) or a blocked loop would. */
function stall(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    /* stalled */
  }
}

/** Grants at once; its extensions and, when told, its tries never answer (a server gone silent). */
class SilentAfterGrant implements LockStrategy {
  readonly name = 'silent';
  readonly capabilities = { fencing: false, fifo: false, sharedLocks: false, crossProcess: true };
  triesAnswer = true;
  tryAcquire(request: LockRequest): Promise<LeaseGrant | null> {
    if (!this.triesAnswer) return new Promise(() => undefined);
    return Promise.resolve({ key: request.key, owner: request.owner, mode: request.mode, expiresAt: Date.now() + request.ttlMs });
  }
  extend(): Promise<LeaseGrant | null> {
    return new Promise(() => undefined);
  }
  async release(): Promise<boolean> {
    return true;
  }
  async close(): Promise<void> {}
}

/** What a stall of the process does to the bounds of server calls and to leases (the engine's clock). */
describe('LockManager through a stall of its process', () => {
  it('tells a holder its lock is lost on waking when the lease ended during the stall, even with a renewal in flight', async () => {
    const manager = new LockManager(new SilentAfterGrant(), { operationTimeout: 300 });
    try {
      const lock = await new LockService(manager).acquire('k', { ttl: 600, autoExtend: true });
      // The watchdog's renewal (a third into the lease) is in flight, unanswered, when the process stalls past
      // the lease's end; the renewal's bound must not be put off past that end.
      await sleep(250);
      stall(750);
      await sleep(50);
      expect(lock.isHeld).toBe(false);
      expect(lock.signal.aborted).toBe(true);
    } finally {
      await manager.close();
    }
  });

  it('ends the bound of a call that lived through a stall at its end plus the stall, not later', async () => {
    const strategy = new SilentAfterGrant();
    strategy.triesAnswer = false;
    const manager = new LockManager(strategy, { operationTimeout: 500 });
    try {
      const attempt = new LockService(manager).tryAcquire('k');
      let failedAt = 0;
      const outcome = attempt.then(
        () => 'granted',
        (error: unknown) => {
          failedAt = performance.now();
          return error;
        },
      );
      // Stalled from 250 ms to 750 ms, across the bound's end (500 ms): it ran 250 ms of its 500.
      await sleep(250);
      stall(500);
      const woke = performance.now();
      expect(await outcome).toBeInstanceOf(LockBackendUnavailableError);
      // The rest of its bound after waking, as the clock measured the stall (to within its 100 ms check):
      // about 200 ms, not the stall again on top of that (about 450 ms).
      expect(failedAt - woke).toBeLessThan(350);
    } finally {
      await manager.close();
    }
  });
});
