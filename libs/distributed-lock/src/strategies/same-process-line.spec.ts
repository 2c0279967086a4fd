import { SameProcessLine } from './same-process-line';

const budget = (signal: AbortSignal = new AbortController().signal) => ({ signal, timeoutMs: 5_000 });

describe('SameProcessLine', () => {
  it('tells the waiter behind an entry that released, with the news, and forgets the listener', async () => {
    const line = new SameProcessLine<string>();
    line.enter('a');
    expect(line.has('a')).toBe(true);
    const waiting = line.waitBehind('a', budget(), Date.now() + 5_000, 5_000);
    line.release('a', 'handed over');
    expect(await waiting).toEqual({ outcome: 'told', news: 'handed over' });
    // Still in the server's line until its removal lands: a late waiter is told at once.
    expect(line.has('a')).toBe(true);
    expect(await line.waitBehind('a', budget(), Date.now() + 5_000, 5_000)).toEqual({ outcome: 'told', news: 'handed over' });
    line.leave('a');
    expect(line.has('a')).toBe(false);
  });

  it('sends the waiter behind an entry that left without releasing to look again', async () => {
    const line = new SameProcessLine<string>();
    line.enter('a');
    const waiting = line.waitBehind('a', budget(), Date.now() + 5_000, 5_000);
    line.leave('a');
    expect(await waiting).toEqual({ outcome: 'look-again' });
  });

  it('looks again after the recheck interval, and times out at the deadline or on abort', async () => {
    const line = new SameProcessLine<string>();
    line.enter('a');
    expect(await line.waitBehind('a', budget(), Date.now() + 5_000, 20)).toEqual({ outcome: 'look-again' });
    expect(await line.waitBehind('a', budget(), Date.now() + 20, 5_000)).toEqual({ outcome: 'timeout' });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 10);
    expect(await line.waitBehind('a', budget(controller.signal), Date.now() + 5_000, 5_000)).toEqual({ outcome: 'timeout' });
  });

  it('does not call a listener that stopped listening', () => {
    const line = new SameProcessLine<string>();
    line.enter('a');
    const heard: Array<string | undefined> = [];
    const stop = line.listen('a', (news) => heard.push(news));
    stop();
    line.release('a', 'handed over');
    expect(heard).toEqual([]);
  });
});
