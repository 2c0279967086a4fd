import type { LockStrategy } from '@app/distributed-lock';

export { abortedWithin } from '../support/aborted-within';

/**
 * Counts calls that reach the strategy (or its semaphore), to prove bad input is rejected before any
 * server is touched.
 */
export function countingProxy(strategy: LockStrategy): { strategy: LockStrategy; calls: () => number } {
  let calls = 0;
  const count = <T extends object>(target: T): T =>
    new Proxy(target, {
      get(inner, property, receiver) {
        const value: unknown = Reflect.get(inner, property, receiver);
        if (property === 'semaphore' && typeof value === 'object' && value !== null) return count(value);
        if (typeof value !== 'function' || property === 'close') return value;
        return (...args: unknown[]) => {
          calls += 1;
          return (value as (...a: unknown[]) => unknown).apply(inner, args);
        };
      },
    });
  return { strategy: count(strategy), calls: () => calls };
}
