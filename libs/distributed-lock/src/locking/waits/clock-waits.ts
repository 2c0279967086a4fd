import type { DeadlineClock } from '../deadline-clock';
import type { CallerBudget } from '../wait-budget';

/**
 * Waits until `arm`'s callback fires (the lock handed over, a turn to poll), the deadline (`Date.now()`
 * ms) passes, or the budget is given up. Resolves true only for a wake-up. The deadline is a deadline on
 * the manager's clock, which keeps the process alive meanwhile: someone awaits it.
 */
export function wakeOrDeadline(clock: DeadlineClock, budget: CallerBudget, deadline: number, arm: (wake: () => void) => () => void): Promise<boolean> {
  return new Promise((resolve) => {
    if (budget.aborted || Date.now() >= deadline) return resolve(false);
    let disarm: (() => void) | undefined;
    let ended = false;
    const done = (woken: boolean): void => {
      if (ended) return;
      ended = true;
      timer.cancel();
      stopWatchingAbort();
      disarm?.();
      resolve(woken);
    };
    // The clock is monotonic and the deadline a wall-clock time: a deadline that fires before the wall clock
    // reaches it waits out the rest, so that whoever reads the clock next finds the wait past it.
    const onTimer = (): void => {
      if (Date.now() >= deadline) return done(false);
      timer = clock.after(Math.max(1, deadline - Date.now()), onTimer, true);
    };
    let timer = clock.after(deadline - Date.now(), onTimer, true);
    const stopWatchingAbort = budget.onAbort(() => done(false));
    // arm may wake at once, before its disarm exists: then the wake-up already ended the wait.
    const stopArming = arm(() => done(true));
    if (ended) stopArming();
    else disarm = stopArming;
  });
}

/** A pause of `ms` on the clock, cut short when the budget is given up. */
export function pause(clock: DeadlineClock, budget: CallerBudget, ms: number): Promise<void> {
  return new Promise((resolve) => {
    if (budget.aborted) return resolve();
    const timer = clock.after(ms, () => {
      stop();
      resolve();
    }, true);
    const stop = budget.onAbort(() => {
      timer.cancel();
      resolve();
    });
  });
}
