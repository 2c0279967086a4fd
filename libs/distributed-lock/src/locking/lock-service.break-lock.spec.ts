import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import { LockLostError } from '../errors/lock-lost.error';
import { InMemoryLockStrategy } from '../strategies/in-memory';
import { LockManager } from './lock-manager';
import { LockService } from './lock-service';

// breakLock on the in-memory strategy, which tells a holder at once (the contract suite runs the same on
// every strategy that can, against its server: test/contract/query.contract.ts).
describe('LockService.breakLock (in memory)', () => {
  const server = new InMemoryLockStrategy();
  const manager = new LockManager(server);
  const locks = new LockService(manager);

  afterAll(() => manager.close());

  it('tells the holder at once (signal aborted, reason "broken"), and serves the next waiter with a higher token', async () => {
    const holder = await locks.acquire('k');
    const next = locks.acquire('k', { waitTimeout: 5_000 });
    const ended = await locks.breakLock('k', { reason: 'ops' });
    expect(ended.map((held) => held.owner.id)).toEqual([holder.owner]);
    expect(holder.signal.aborted).toBe(true);
    expect((holder.signal.reason as LockLostError).reason).toBe('broken');
    const successor = await next;
    expect(successor.fencingToken).toBeGreaterThan(holder.fencingToken as number);
    expect(await holder.release()).toBe(false);
    await successor.release();
  });

  it('tells a successor broken while its grant was still on its way (two breaks at once): it never believes it holds a lock someone else may take', async () => {
    // Two instances on one in-memory server (closing either manager closes it: once, at the end).
    const shared = new InMemoryLockStrategy();
    const [holderSide, waiterSide] = [new LockManager(shared), new LockManager(shared)];
    try {
      const holder = await new LockService(holderSide).acquire('twice', { ttl: 3_000 });
      const next = new LockService(waiterSide).acquire('twice', { ttl: 3_000, waitTimeout: 5_000 });
      await new Promise((resolve) => setTimeout(resolve, 20));
      const operator = new LockService(holderSide);
      const [first, second] = await Promise.all([operator.breakLock('twice', { reason: 'one' }), operator.breakLock('twice', { reason: 'two' })]);
      expect(first.map((held) => held.owner.id)).toEqual([holder.owner]);
      const successor = await next;
      // The second break found the successor granted and ended it: the successor must have been told.
      expect(second.map((held) => held.owner.id)).toEqual([successor.owner]);
      await new Promise((resolve) => setTimeout(resolve, 0));
      expect(successor.signal.aborted).toBe(true);
      expect((successor.signal.reason as LockLostError).reason).toBe('broken');
      expect(successor.isHeld).toBe(false);
    } finally {
      await holderSide.close();
    }
  });

  it('ends a section whose lock was re-entered, whole, and the section ends in LockLostError', async () => {
    const outcome = await locks
      .withLock('n', () =>
        locks.withLock('n', async (inner) => {
          await locks.breakLock('n', { reason: 'ops' });
          return inner.signal.aborted;
        }),
      )
      .catch((error: unknown) => error);
    // The outer section threw the inner one's rejection: the loss, with that rejection (and its value) as cause.
    expect(outcome).toBeInstanceOf(LockLostError);
    expect((outcome as LockLostError).reason).toBe('broken');
    expect(((outcome as LockLostError).cause as LockLostError).sectionResult).toEqual({ value: true });
    expect(await locks.tryAcquire('n')).not.toBeNull();
  });

  it('ends every reader of a shared lock', async () => {
    const readers = await Promise.all([locks.acquire('r', { mode: 'shared' }), locks.acquire('r', { mode: 'shared' })]);
    expect((await locks.breakLock('r', { reason: 'ops' })).map((held) => held.mode)).toEqual(['shared', 'shared']);
    expect(readers.every((reader) => reader.signal.aborted)).toBe(true);
  });

  it('records who broke what in the broken event, and refuses a missing reason before anything is broken', async () => {
    const seen: unknown[] = [];
    manager.events.on('broken', (event) => seen.push(event));
    const holder = await locks.acquire('e');
    await expect(locks.breakLock('e', { reason: '' })).rejects.toThrow(/reason/);
    expect(holder.isHeld).toBe(true);
    await expect(locks.breakLock('e', { reason: 'ops', force: true } as { reason: string })).rejects.toThrow(/force/);
    expect(holder.isHeld).toBe(true);
    await locks.breakLock('e', { reason: 'ops: ticket 1' });
    expect(seen).toEqual([{ strategy: 'memory', key: 'e', reason: 'ops: ticket 1', owners: [holder.owner] }]);
  });

  it('records nothing when the break is refused before anything was tried (a strategy that cannot, a closed service)', async () => {
    const cannot = new LockManager(new Proxy(new InMemoryLockStrategy(), { get: (target, property) => (property === 'breakLock' ? undefined : Reflect.get(target, property, target)) }));
    const seen: unknown[] = [];
    cannot.events.on('broken', (event) => seen.push(event));
    await expect(new LockService(cannot).breakLock('c', { reason: 'ops' })).rejects.toBeInstanceOf(InvalidLockOptionsError);
    await cannot.close();
    const closed = new LockManager(new InMemoryLockStrategy());
    closed.events.on('broken', (event) => seen.push(event));
    await closed.close();
    await expect(new LockService(closed).breakLock('c', { reason: 'ops' })).rejects.toBeInstanceOf(LockBackendUnavailableError);
    expect(seen).toEqual([]);
  });

  it('records the attempt when the break fails on its way (owners unknown), and rejects with the typed error', async () => {
    // A store that ends the holds and then answers too late for the operation timeout.
    const slowServer = new InMemoryLockStrategy({ name: 'slow-break' });
    const slow = new Proxy(slowServer, {
      get: (target, property) =>
        property === 'breakLock'
          ? async (key: string) => {
              const ended = await target.breakLock(key);
              await new Promise((resolve) => setTimeout(resolve, 200));
              return ended;
            }
          : Reflect.get(target, property, target),
    });
    const slowManager = new LockManager(slow, { operationTimeout: 50 });
    const slowLocks = new LockService(slowManager);
    const seen: Array<{ owners: readonly string[] | null; error?: unknown }> = [];
    slowManager.events.on('broken', (event) => seen.push(event));
    const holder = await slowLocks.acquire('s');
    await expect(slowLocks.breakLock('s', { reason: 'ops' })).rejects.toBeInstanceOf(LockBackendUnavailableError);
    expect(holder.signal.aborted).toBe(true);
    expect(seen).toEqual([{ strategy: 'slow-break', key: 's', reason: 'ops', owners: null, error: expect.any(LockBackendUnavailableError) }]);
    await slowManager.close();
  });
});
