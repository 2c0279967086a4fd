import { CallerBudget } from './wait-budget';
import { budgetAborted, budgetWithin, onBudgetAbort, waitForWake } from './wait-for-wake';

const budget = (signal: AbortSignal = new AbortController().signal) => ({ signal, timeoutMs: 1_000 });

describe('waitForWake', () => {
  it('resolves true on a wake-up and disarms', async () => {
    let disarmed = false;
    const woken = await waitForWake(budget(), Date.now() + 1_000, (wake) => {
      setTimeout(wake, 10);
      return () => (disarmed = true);
    });
    expect(woken).toBe(true);
    expect(disarmed).toBe(true);
  });

  it('resolves false at the deadline and on abort, and handles a wake-up during arming', async () => {
    expect(await waitForWake(budget(), Date.now() + 20, () => undefined)).toBe(false);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 10);
    expect(await waitForWake(budget(controller.signal), Date.now() + 5_000, () => undefined)).toBe(false);
    expect(await waitForWake(budget(), Date.now() + 1_000, (wake) => wake())).toBe(true);
    const aborted = new AbortController();
    aborted.abort();
    expect(await waitForWake(budget(aborted.signal), Date.now() + 1_000, () => undefined)).toBe(false);
  });
});

describe('budget abort helpers', () => {
  it("use the budget's cheap views when it has them, without making its signal", async () => {
    const listeners = new Set<() => void>();
    let aborted = false;
    const budget = {
      timeoutMs: 1_000,
      get signal(): AbortSignal {
        throw new Error('the signal was made');
      },
      get aborted(): boolean {
        return aborted;
      },
      onAbort(listener: () => void): () => void {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
    };
    expect(budgetAborted(budget)).toBe(false);
    const waiting = waitForWake(budget, Date.now() + 5_000, () => undefined);
    expect(listeners.size).toBe(1);
    aborted = true;
    for (const listener of [...listeners]) listener();
    expect(await waiting).toBe(false);
    expect(listeners.size).toBe(0);
    expect(budgetAborted(budget)).toBe(true);
  });

  it("fall back to the budget's signal", () => {
    const controller = new AbortController();
    const budget = { signal: controller.signal, timeoutMs: 1_000 };
    let heard = 0;
    const stop = onBudgetAbort(budget, () => (heard += 1));
    expect(budgetAborted(budget)).toBe(false);
    controller.abort();
    expect(budgetAborted(budget)).toBe(true);
    expect(heard).toBe(1);
    stop();
  });
});

describe('budgetWithin', () => {
  it("has less time but the whole budget's give-up, without making its signal", () => {
    const whole = new CallerBudget(1_000, undefined);
    const part = budgetWithin(whole, 250);
    const heard: string[] = [];
    onBudgetAbort(part, () => heard.push('part'));
    expect(part.timeoutMs).toBe(250);
    expect(budgetAborted(part)).toBe(false);
    whole.giveUp();
    expect(budgetAborted(part)).toBe(true);
    expect(heard).toEqual(['part']);
    expect(part.signal.aborted).toBe(true);
  });
});
