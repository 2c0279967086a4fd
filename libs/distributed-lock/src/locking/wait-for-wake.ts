import type { WaitBudget } from './lock-lease';

/** True once the caller gave up (without making the budget's signal when the budget offers `aborted`). */
export function budgetAborted(budget: WaitBudget): boolean {
  return budget.aborted ?? budget.signal.aborted;
}

/** Calls `listener` once if the caller gives up; returns the way to stop listening. */
export function onBudgetAbort(budget: WaitBudget, listener: () => void): () => void {
  if (budget.onAbort) return budget.onAbort(listener);
  const signal = budget.signal;
  signal.addEventListener('abort', listener, { once: true });
  return () => signal.removeEventListener('abort', listener);
}

/** The same budget with less time left; its signal is still made only if someone reads it. */
export function budgetWithin(budget: WaitBudget, timeoutMs: number): WaitBudget {
  return new NarrowedBudget(budget, timeoutMs);
}

// A class, not an object literal with getters: one is made per acquisition (see CallerBudget).
class NarrowedBudget implements WaitBudget {
  constructor(
    private readonly whole: WaitBudget,
    readonly timeoutMs: number,
  ) {}

  get signal(): AbortSignal {
    return this.whole.signal;
  }

  get aborted(): boolean {
    return budgetAborted(this.whole);
  }

  onAbort(listener: () => void): () => void {
    return onBudgetAbort(this.whole, listener);
  }

  serverAnswered(): void {
    this.whole.serverAnswered?.();
  }
}

/**
 * Waits until `arm`'s callback fires (a release notification, a watch event), the deadline passes, or the
 * budget's signal aborts. Resolves true only for a wake-up. Strategies use it for every notified wait,
 * so each one has the same bound and the same clean-up.
 */
export function waitForWake(budget: WaitBudget, deadline: number, arm: (wake: () => void) => (() => void) | void): Promise<boolean> {
  return new Promise((resolve) => {
    if (budgetAborted(budget) || Date.now() >= deadline) return resolve(false);
    // A holder, not a const: the wake-up may fire while `arm` is still running.
    const armed: { disarm?: (() => void) | void } = {};
    const done = (woken: boolean): void => {
      clearTimeout(timer);
      stopWatchingAbort();
      armed.disarm?.();
      resolve(woken);
    };
    const onAbort = (): void => done(false);
    // Timers may fire a millisecond before the wall clock reaches the deadline: wait out the rest, so that a
    // wait that ends at its deadline is past it for whoever reads the clock next.
    const onTimer = (): void => {
      if (Date.now() >= deadline) return done(false);
      timer = setTimeout(onTimer, Math.max(1, deadline - Date.now()));
    };
    let timer = setTimeout(onTimer, Math.max(0, deadline - Date.now()));
    const stopWatchingAbort = onBudgetAbort(budget, onAbort);
    armed.disarm = arm(() => done(true));
  });
}
