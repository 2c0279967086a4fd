import { lookUntil } from './look-until';

describe('lookUntil', () => {
  it('looks until the look answers true', async () => {
    let looks = 0;
    expect(await lookUntil(async () => (looks += 1) === 3, 1_000)).toBe(true);
    expect(looks).toBe(3);
  });

  it('gives up once the time has passed', async () => {
    const started = performance.now();
    expect(await lookUntil(async () => false, 30)).toBe(false);
    expect(performance.now() - started).toBeGreaterThanOrEqual(30);
  });

  it('starts no look once its signal aborts, also from within a pause', async () => {
    const gaveUp = new AbortController();
    let looks = 0;
    const looking = lookUntil(
      async () => {
        looks += 1;
        return false;
      },
      10_000,
      gaveUp.signal,
    );
    // Past the first pauses (1, 2, 4 … ms): it now pauses 50 ms between looks.
    await new Promise((resolve) => setTimeout(resolve, 150));
    gaveUp.abort();
    const seen = looks;
    expect(await looking).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(looks).toBe(seen);
  });

  it('starts none at all with a signal aborted already', async () => {
    let looks = 0;
    expect(await lookUntil(async () => (looks += 1) > 0, 1_000, AbortSignal.abort())).toBe(false);
    expect(looks).toBe(0);
  });
});
