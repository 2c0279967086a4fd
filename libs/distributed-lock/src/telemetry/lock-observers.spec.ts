import { LockManager } from '../locking/lock-manager';
import type { LockObserver, ObservedLockManager } from '../locking/lock-observer';
import { LockService } from '../locking/lock-service';
import { InMemoryLockStrategy } from '../strategies/in-memory';
import { LockObservers } from './lock-observers';

/** An observer that writes down what it is told, and wraps sections in a named frame. */
function recording(name: string, log: string[]): LockObserver {
  return {
    attach: (manager: ObservedLockManager) => log.push(`${name} attach ${manager.name}`),
    detach: (manager: ObservedLockManager) => log.push(`${name} detach ${manager.name}`),
    acquisitionStarted: (_manager, acquisition) => {
      log.push(`${name} start ${acquisition.key}`);
      return {
        waitEnded: (outcome) => {
          log.push(`${name} ${outcome}`);
          return {
            run: <T>(fn: () => T): T => {
              log.push(`${name} enters`);
              return fn();
            },
            holdEnded: () => log.push(`${name} released`),
          };
        },
      };
    },
  };
}

describe('LockObservers', () => {
  it('tells every observer, runs a section inside each in order, and attaches one added later to running managers', async () => {
    const log: string[] = [];
    const observers = new LockObservers([recording('a', log)]);
    const manager = new LockManager(new InMemoryLockStrategy(), { name: 'm', observer: observers });
    observers.add(recording('b', log));
    await new LockService(manager).withLock('k', () => log.push('section'));
    await manager.close();
    expect(log).toEqual([
      'a attach m',
      'b attach m',
      'a start k',
      'b start k',
      'a acquired',
      'b acquired',
      'a enters',
      'b enters',
      'section',
      'a released',
      'b released',
      'a detach m',
      'b detach m',
    ]);
  });

  it('with one observer, hands out that observer\'s own observation (nothing wrapped around it)', async () => {
    const own = { waitEnded: () => undefined };
    const only: LockObserver = { ...recording('a', []), acquisitionStarted: () => own };
    const observers = new LockObservers([only]);
    const manager = new LockManager(new InMemoryLockStrategy(), { observer: observers });
    expect(observers.acquisitionStarted(manager, { key: 'k', mode: 'exclusive', tryOnly: false, startedAt: performance.now() })).toBe(own);
    await manager.close();
  });

  it('calls a hold observation\'s run as a method (observations may be class instances)', async () => {
    const entered: string[] = [];
    class Hold {
      constructor(private readonly name: string) {}
      run<T>(fn: () => T): T {
        entered.push(this.name);
        return fn();
      }
      holdEnded(): void {}
    }
    const observer = (name: string): LockObserver => ({
      attach: () => undefined,
      detach: () => undefined,
      acquisitionStarted: () => ({ waitEnded: () => new Hold(name) }),
    });
    const manager = new LockManager(new InMemoryLockStrategy(), { observer: new LockObservers([observer('a'), observer('b')]) });
    await new LockService(manager).withLock('k', () => undefined);
    await manager.close();
    expect(entered).toEqual(['a', 'b']);
  });
});
