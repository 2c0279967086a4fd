import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error';
import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import { PermitsMismatchError } from '../errors/permits-mismatch.error';
import { InMemoryLockStrategy } from '../strategies/in-memory/in-memory-lock.strategy';
import type { LockEventMap } from './lock-events';
import type { LockStrategy } from './lock-strategy.interface';
import { LockManager } from './lock-manager';
import { LockService } from './lock-service';
import { PermitHandle } from './permit-handle';

const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

describe('LockService permits (counting semaphores)', () => {
  let manager: LockManager;
  let locks: LockService;

  beforeEach(() => {
    manager = new LockManager(new InMemoryLockStrategy(), { name: 'orders' });
    locks = new LockService(manager, { keyPrefix: 'app:' });
  });

  afterEach(async () => {
    await manager.close();
  });

  it('hands out permits with their size, weight, prefixed key and a fencing token', async () => {
    const permit = await locks.acquirePermit('payments', { permits: 3, weight: 2 });
    expect(permit).toBeInstanceOf(PermitHandle);
    expect([permit.key, permit.permits, permit.weight, permit.reentered]).toEqual(['app:payments', 3, 2, false]);
    expect(permit.fencingToken).toBeGreaterThan(0);
    expect(await locks.tryAcquirePermit('payments', { permits: 3, weight: 2 })).toBeNull();
    await permit.release();
  });

  it('emits the lock events, with the permit’s size and weight', async () => {
    const seen: Array<LockEventMap['acquired'][0] | LockEventMap['released'][0]> = [];
    manager.events.on('acquired', (event) => seen.push(event));
    manager.events.on('released', (event) => seen.push(event));
    const permit = await locks.acquirePermit('payments', { permits: 4 });
    await permit.release();
    expect(seen.map((event) => [event.key, event.permits, event.weight, event.strategy])).toEqual([
      ['app:payments', 4, 1, 'orders'],
      ['app:payments', 4, 1, 'orders'],
    ]);
    expect('wasHeld' in seen[1] && seen[1].wasHeld).toBe(true);
  });

  it('never re-enters: a nested withPermit on the same semaphore takes a place of its own', async () => {
    const inner = await locks.withPermit(
      'payments',
      () => locks.withPermit('payments', () => 'inner', { permits: 1, waitTimeout: 100 }).catch((error: unknown) => error),
      { permits: 1 },
    );
    expect(inner).toBeInstanceOf(LockAcquireTimeoutError);
    // The service's defaults cannot make permits re-entrant or exclusive.
    const reentrant = new LockService(manager, { defaults: { reentrant: true, mode: 'exclusive' } });
    const permit = await reentrant.acquirePermit('k', { permits: 2 });
    expect(permit.mode).toBe('shared');
    expect(await reentrant.withPermit('k', (nested) => nested.owner !== permit.owner, { permits: 2 })).toBe(true);
    await permit.release();
  });

  it('reports a size mismatch under the strategy’s registered name', async () => {
    const permit = await locks.acquirePermit('payments', { permits: 5 });
    const error = await locks.acquirePermit('payments', { permits: 3 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PermitsMismatchError);
    expect(error).toMatchObject({ key: 'app:payments', strategy: 'orders', requested: 3, actual: 5 });
    await permit.release();
  });

  it('refuses permits on a strategy without semaphores, naming it, before calling it', async () => {
    const calls: string[] = [];
    const plain: LockStrategy = {
      name: 'plain',
      capabilities: { fencing: false, fifo: false, sharedLocks: false, crossProcess: true },
      tryAcquire: async () => {
        calls.push('tryAcquire');
        return null;
      },
      extend: async () => null,
      release: async () => false,
      close: async () => undefined,
    };
    const service = new LockService(new LockManager(plain, { name: 'legacy' }));
    const error = await service.acquirePermit('k', { permits: 2 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidLockOptionsError);
    expect((error as InvalidLockOptionsError).option).toBe('permits');
    expect((error as Error).message).toMatch(/strategy "legacy" has no semaphores/);
    expect(calls).toEqual([]);
  });

  it('ends permit waits at close() and gives held permits back', async () => {
    const holder = await locks.acquirePermit('payments', { permits: 1 });
    const waiting = locks.acquirePermit('payments', { permits: 1, waitTimeout: 10_000 }).catch((e: unknown) => e);
    await sleep(20);
    await manager.close();
    expect(await waiting).toBeInstanceOf(LockBackendUnavailableError);
    expect(holder.isHeld).toBe(false);
    expect(holder.signal.aborted).toBe(true);
  });

  it('counts a permit among the held locks', async () => {
    const permit = await locks.acquirePermit('payments', { permits: 2 });
    expect(manager.heldCount).toBe(1);
    await permit.release();
    expect(manager.heldCount).toBe(0);
  });
});
