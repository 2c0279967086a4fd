import { waitForWake } from './wait-for-wake';

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
