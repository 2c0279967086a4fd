import { LockNotReplicatedError } from '../../errors/lock-not-replicated.error';
import { outcomeUnknown, RedisGiveBacks } from './redis-give-back';

const replyError = (message: string): Error => Object.assign(new Error(message), { name: 'ReplyError' });
const connectionClosed = (): Error => new Error('Connection is closed.');

describe('RedisGiveBacks', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('tells a call that may have run (the connection went) from one whose outcome is known', () => {
    expect(outcomeUnknown(connectionClosed())).toBe(true);
    expect(outcomeUnknown(Object.assign(new Error('Reached the max retries per request limit'), { name: 'MaxRetriesPerRequestError' }))).toBe(true);
    expect(outcomeUnknown(replyError('NOPERM this user has no permissions'))).toBe(false);
    expect(outcomeUnknown(new LockNotReplicatedError('k', 'redis', 'acquire', 'too-few-replicas', 1, 0, 500))).toBe(false);
  });

  it('gives back at once, and again 100 ms apart and doubling while Redis cannot be reached, until the lease would have ended', async () => {
    const calls: number[] = [];
    const start = Date.now();
    const giveBacks = new RedisGiveBacks();
    const giveBack = (): Promise<never> => {
      calls.push(Date.now() - start);
      return Promise.reject(connectionClosed());
    };
    giveBacks.afterFailure(connectionClosed(), giveBack, 1_000);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(calls).toEqual([0, 100, 300, 700]);
  });

  it('stops at the first answer, also an error reply, and gives nothing back for a known outcome', async () => {
    const owners: string[] = [];
    let failures = 1;
    const giveBacks = new RedisGiveBacks();
    const giveBackOf = (owner: string) => (): Promise<never> => {
      owners.push(owner);
      return failures-- > 0 ? Promise.reject(connectionClosed()) : Promise.reject(replyError('ERR'));
    };
    giveBacks.afterFailure(connectionClosed(), giveBackOf('a'), 30_000);
    giveBacks.afterFailure(replyError('NOSCRIPT'), giveBackOf('b'), 30_000);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(owners).toEqual(['a', 'a']);
  });

  it('drops the tries still to come at close', async () => {
    let calls = 0;
    const giveBacks = new RedisGiveBacks();
    const giveBack = (): Promise<never> => {
      calls += 1;
      return Promise.reject(connectionClosed());
    };
    giveBacks.afterFailure(connectionClosed(), giveBack, 30_000);
    await vi.advanceTimersByTimeAsync(0);
    giveBacks.close();
    await vi.advanceTimersByTimeAsync(10_000);
    giveBacks.send(giveBack, 30_000);
    expect(calls).toBe(1);
  });
});
