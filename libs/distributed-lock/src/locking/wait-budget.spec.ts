import { CallerBudget } from './wait-budget';

describe('CallerBudget', () => {
  it('calls each abort listener once when given up, and not those that stopped listening', () => {
    const budget = new CallerBudget(1_000, undefined);
    const heard: string[] = [];
    budget.onAbort(() => heard.push('a'));
    const stop = budget.onAbort(() => heard.push('b'));
    stop();
    expect(budget.aborted).toBe(false);
    budget.giveUp();
    budget.giveUp();
    expect(heard).toEqual(['a']);
    expect(budget.aborted).toBe(true);
  });

  it('makes its signal on first read, already aborted when the budget was given up before', () => {
    const budget = new CallerBudget(1_000, undefined);
    budget.giveUp();
    expect(budget.signal.aborted).toBe(true);
    const fresh = new CallerBudget(1_000, undefined);
    const signal = fresh.signal;
    expect(signal.aborted).toBe(false);
    fresh.giveUp();
    expect(signal.aborted).toBe(true);
  });

  it("follows the caller's signal: aborted from the start, or when the caller aborts", () => {
    const aborted = new AbortController();
    aborted.abort();
    expect(new CallerBudget(1_000, aborted.signal).aborted).toBe(true);
    const caller = new AbortController();
    const budget = new CallerBudget(1_000, caller.signal);
    const signal = budget.signal;
    caller.abort();
    expect(signal.aborted).toBe(true);
  });
});
