import type { WaitBudget } from './lock-lease';

/**
 * Waits until `arm`'s callback fires (a release notification, a watch event), the deadline passes, or the
 * budget's signal aborts. Resolves true only for a wake-up. Strategies use it for every notified wait,
 * so each one has the same bound and the same clean-up.
 */
export function waitForWake(budget: WaitBudget, deadline: number, arm: (wake: () => void) => (() => void) | void): Promise<boolean> {
  return new Promise((resolve) => {
    if (budget.signal.aborted || Date.now() >= deadline) return resolve(false);
    // A holder, not a const: the wake-up may fire while `arm` is still running.
    const armed: { disarm?: (() => void) | void } = {};
    const done = (woken: boolean): void => {
      clearTimeout(timer);
      budget.signal.removeEventListener('abort', onAbort);
      armed.disarm?.();
      resolve(woken);
    };
    const onAbort = (): void => done(false);
    const timer = setTimeout(() => done(false), Math.max(0, deadline - Date.now()));
    budget.signal.addEventListener('abort', onAbort, { once: true });
    armed.disarm = arm(() => done(true));
  });
}
