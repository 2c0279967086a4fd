import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { InMemoryLockStrategy } from '../strategies/in-memory/in-memory-lock.strategy';
import { LockManager } from './lock-manager';

describe('LockManager instanceName', () => {
  it.each([[''], ['pod:1'], ['x'.repeat(65)], ['pod name'], ['pöd'], [42]])('refuses %j with InvalidLockOptionsError naming the option', (instanceName) => {
    expect(() => new LockManager(new InMemoryLockStrategy(), { instanceName } as never)).toThrow(InvalidLockOptionsError);
    expect(() => new LockManager(new InMemoryLockStrategy(), { instanceName } as never)).toThrow(/instanceName/);
  });
});
