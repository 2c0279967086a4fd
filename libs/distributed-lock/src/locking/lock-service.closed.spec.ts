import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import { LockServiceClosedError } from '../errors/lock-service-closed.error';
import { InMemoryLockStrategy } from '../strategies/in-memory/in-memory-lock.strategy';
import { LockManager } from './lock-manager';
import { LockService } from './lock-service';

describe('LockService once closed', () => {
  it('rejects every call, and a wait under way, with LockServiceClosedError: a LockBackendUnavailableError that says so', async () => {
    const manager = new LockManager(new InMemoryLockStrategy());
    const locks = new LockService(manager);
    const held = await locks.acquire('k');
    const waiting = locks.acquire('k', { waitTimeout: 10_000 }).catch((error: unknown) => error);
    await manager.close();
    expect(held.isHeld).toBe(false);
    const calls: Array<[string, () => Promise<unknown>]> = [
      ['the wait under way', () => waiting.then((error) => Promise.reject(error))],
      ['acquire', () => locks.acquire('k')],
      ['tryAcquire', () => locks.tryAcquire('k')],
      ['withLock', () => locks.withLock('k', () => 1)],
      ['acquirePermit', () => locks.acquirePermit('p', { permits: 2 })],
      ['tryAcquirePermit', () => locks.tryAcquirePermit('p', { permits: 2 })],
      ['query', () => locks.query('k')],
      ['queryPermits', () => locks.queryPermits('p')],
      ['breakLock', () => locks.breakLock('k', { reason: 'test' })],
    ];
    for (const [name, call] of calls) {
      const error = await call().then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(error, name).toBeInstanceOf(LockServiceClosedError);
      expect(error, name).toBeInstanceOf(LockBackendUnavailableError);
      expect((error as Error).message, name).toMatch(/the lock service is closed/);
      expect((error as Error).message, name).not.toMatch(/server is up/);
    }
  });
});
