import { untilGivenUp } from './until-given-up';

const never = (): Promise<void> => new Promise(() => undefined);

describe('untilGivenUp', () => {
  it('settles as the work does when the work comes first', async () => {
    const giveUp = new AbortController();
    await expect(untilGivenUp(Promise.resolve('done'), giveUp.signal)).resolves.toBeUndefined();
    await expect(untilGivenUp(Promise.reject(new Error('refused')), giveUp.signal)).rejects.toThrow('refused');
    await expect(untilGivenUp(Promise.reject(new Error('refused')), undefined)).rejects.toThrow('refused');
  });

  it('resolves when given up, without the work, and drops a later failure of it', async () => {
    const giveUp = new AbortController();
    let fail: (error: Error) => void = () => undefined;
    const work = new Promise<void>((_resolve, reject) => (fail = reject));
    const waited = untilGivenUp(work, giveUp.signal);
    giveUp.abort();
    await expect(waited).resolves.toBeUndefined();
    // Unhandled, this would fail the run.
    fail(new Error('late'));
    await new Promise((resolve) => setImmediate(resolve));
  });

  it('does not wait at all once already given up', async () => {
    const giveUp = new AbortController();
    giveUp.abort();
    await expect(untilGivenUp(never(), giveUp.signal)).resolves.toBeUndefined();
  });

  it('leaves no listener on the signal once the work settled', async () => {
    const giveUp = new AbortController();
    const added = vi.spyOn(giveUp.signal, 'addEventListener');
    const removed = vi.spyOn(giveUp.signal, 'removeEventListener');
    await untilGivenUp(Promise.resolve(), giveUp.signal);
    expect(removed).toHaveBeenCalledTimes(added.mock.calls.length);
  });
});
