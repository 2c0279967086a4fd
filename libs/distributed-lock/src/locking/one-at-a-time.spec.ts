import { OneAtATime } from './one-at-a-time';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('OneAtATime', () => {
  it('starts a task of a key once the one before it has settled, failed or not; other keys run beside', async () => {
    const turns = new OneAtATime();
    const seen: string[] = [];
    const step = (name: string, ms: number, fail = false) => async (): Promise<string> => {
      seen.push(`start ${name}`);
      await sleep(ms);
      seen.push(`end ${name}`);
      if (fail) throw new Error(name);
      return name;
    };
    const first = turns.run('a', step('a1', 40, true));
    const second = turns.run('a', step('a2', 10));
    const other = turns.run('b', step('b1', 10));
    await expect(first).rejects.toThrow('a1');
    await expect(second).resolves.toBe('a2');
    await expect(other).resolves.toBe('b1');
    expect(seen).toEqual(['start a1', 'start b1', 'end b1', 'end a1', 'start a2', 'end a2']);
  });

  it('starts the next task after maxWaitMs behind one that hangs, and tells the hung one it was overtaken', async () => {
    const turns = new OneAtATime();
    let overtaken: (() => boolean) | undefined;
    let finishHung: () => void = () => undefined;
    const hung = turns.run('a', (isOvertaken) => {
      overtaken = isOvertaken;
      return new Promise<string>((resolve) => (finishHung = () => resolve('hung')));
    });
    const startedAt = Date.now();
    const next = await turns.run('a', async (isOvertaken) => (isOvertaken() ? 'overtaken' : 'latest'), 50);
    expect(next).toBe('latest');
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(45);
    expect(overtaken?.()).toBe(true);
    finishHung();
    await expect(hung).resolves.toBe('hung');
  });

  it('forgets a key once its last task has settled', async () => {
    const turns = new OneAtATime();
    await turns.run('a', async () => 1);
    await sleep(0);
    expect((turns as unknown as { keys: Map<string, unknown> }).keys.size).toBe(0);
  });
});
