import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockLostError } from '../errors/lock-lost.error';
import { InMemoryLockStrategy } from '../strategies/in-memory/in-memory-lock.strategy';
import type { LeaseGrant } from './lock-lease';
import { LockManager } from './lock-manager';
import { LockService } from './lock-service';
import type { LockStrategy, ReleaseOutcome } from './lock-strategy.interface';

/** Moves the fake clock on, running every timer due and the promise callbacks they start. */
const advance = (ms: number): Promise<void> => vi.advanceTimersByTimeAsync(ms).then(() => undefined);

/** A client of one shared in-memory "server" that records what it is asked; closing it closes nothing shared. */
function recordingClient(server: InMemoryLockStrategy, transactional = false): LockStrategy & { extended: number[]; released: ReleaseOutcome[] } {
  const extended: number[] = [];
  const released: ReleaseOutcome[] = [];
  return {
    name: 'recording',
    capabilities: { ...server.capabilities, transactional },
    extended,
    released,
    tryAcquire: (request) => server.tryAcquire(request),
    extend: (lease: LeaseGrant, ttl: number) => {
      extended.push(ttl);
      return server.extend(lease, ttl);
    },
    release: (lease: LeaseGrant, outcome: ReleaseOutcome = 'completed') => {
      released.push(outcome);
      return server.release(lease);
    },
    close: async () => undefined,
  };
}

describe('LockHandle.releaseAfter', () => {
  // The delay, the shortened lease and the in-memory store's expiry all run on setTimeout and Date.now: on a
  // fake clock "not before the delay" and "not waiting out the delay" are exact, where real timers left 50 to
  // 200 ms of margin that a stalled event loop (a loaded CI machine) could eat.
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('keeps the lock taken for the delay with a lease shortened to it, then releases it', async () => {
    const server = new InMemoryLockStrategy();
    const client = recordingClient(server);
    const locks = new LockService(new LockManager(client));
    const other = new LockService(new LockManager(server));
    const lock = await locks.acquire('job', { ttl: 10_000 });
    expect(await lock.releaseAfter(150)).toBe(true);
    expect(lock.isHeld).toBe(false);
    // The lease now ends with the delay: had this process died here, the key would free itself then.
    expect(client.extended).toHaveLength(1);
    expect(client.extended[0]).toBeGreaterThan(100);
    expect(client.extended[0]).toBeLessThanOrEqual(150);
    expect(await other.tryAcquire('job')).toBeNull();
    await advance(149);
    expect(client.released).toEqual([]);
    expect(await other.tryAcquire('job')).toBeNull(); // still taken until the delay ends
    await advance(71);
    expect(client.released).toEqual(['completed']);
    const next = await other.tryAcquire('job');
    expect(next).not.toBeNull();
    await next?.release();
  });

  it('releases at once with a delay of 0, and refuses a bad delay before touching the lock', async () => {
    const locks = new LockService(new LockManager(new InMemoryLockStrategy()));
    const lock = await locks.acquire('job');
    await expect(lock.releaseAfter(-1)).rejects.toBeInstanceOf(InvalidLockOptionsError);
    await expect(lock.releaseAfter(Number.NaN)).rejects.toBeInstanceOf(InvalidLockOptionsError);
    expect(lock.isHeld).toBe(true);
    expect(await lock.releaseAfter(0)).toBe(true);
    expect(await locks.tryAcquire('job')).not.toBeNull();
    expect(await lock.releaseAfter(10)).toBe(false);
  });

  it('reports a lock that was taken away during the section as lost, as a release would', async () => {
    const server = new InMemoryLockStrategy();
    const locks = new LockService(new LockManager(server));
    const lost: string[] = [];
    locks.events.on('lost', (event) => lost.push(event.reason));
    const lock = await locks.acquire('job', { ttl: 10_000 });
    server.forceRelease('job');
    expect(await lock.releaseAfter(100)).toBe(false);
    expect(() => lock.throwIfLost()).toThrow(LockLostError);
    expect(lost).toContain('removed');
  });

  it('close() does not wait out the delay, and leaves the lock to end in the store', async () => {
    const server = new InMemoryLockStrategy();
    const manager = new LockManager(recordingClient(server));
    const other = new LockService(new LockManager(server));
    const lock = await new LockService(manager).acquire('job', { ttl: 10_000 });
    await lock.releaseAfter(300);
    const started = Date.now();
    let closedAt: number | undefined;
    const closing = manager.close().then(() => (closedAt = Date.now()));
    await advance(299);
    expect(closedAt).toBeDefined(); // closed before the delay ended…
    expect((closedAt ?? Number.POSITIVE_INFINITY) - started).toBeLessThan(200); // …and without waiting on it
    await closing;
    expect(await other.tryAcquire('job')).toBeNull(); // left to end in the store, with the delay
    await advance(51);
    const next = await other.tryAcquire('job');
    expect(next).not.toBeNull();
    await next?.release();
  });

  it('where the lock is a transaction, sets the lease past the delay so that the COMMIT at its end comes first', async () => {
    const server = new InMemoryLockStrategy();
    const client = recordingClient(server, true);
    const locks = new LockService(new LockManager(client, { operationTimeout: 1_000 }));
    const lock = await locks.acquire('job', { ttl: 10_000 });
    await lock.releaseAfter(100);
    expect(client.extended[0]).toBeGreaterThan(1_050);
    await advance(99);
    expect(client.released).toEqual([]);
    await advance(61);
    expect(client.released).toEqual(['completed']);
  });
});
