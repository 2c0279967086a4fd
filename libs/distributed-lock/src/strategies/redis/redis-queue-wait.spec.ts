import { EventEmitter } from 'node:events';
import type { RedisSubscriberClient } from './redis-client.type';
import { RedisChannelListener } from './redis-channel-listener';
import { RedisInbox } from './redis-inbox';
import { queueCheck, waitInRedisQueue, type RedisQueueCheck } from './redis-queue-wait';

/** A subscriber connection that confirms every SUBSCRIBE at once; `emit('message', …)` delivers. */
class FakeSubscriber extends EventEmitter {
  status = 'ready';
  channel = '';
  async subscribe(channel: string): Promise<number> {
    this.channel = channel;
    return 1;
  }
  async unsubscribe(): Promise<number> {
    return 0;
  }
  async quit(): Promise<'OK'> {
    return 'OK';
  }
  disconnect(): void {}
}

const budget = (timeoutMs: number): { signal: AbortSignal; timeoutMs: number } => ({ signal: new AbortController().signal, timeoutMs });

/**
 * The wait's reading of a hand-over message against the checks around it (the server's side of it runs
 * against a real Redis in test/faults/redis-late-hand-over.fault.spec.ts).
 */
describe('waitInRedisQueue', () => {
  /** A wait whose checks answer `checks` in turn (the last one again and again), re-checking every 20 ms. */
  function setUp(checks: Array<(deliver: (token: number) => void) => RedisQueueCheck>): { run: () => ReturnType<typeof waitInRedisQueue>; deliver: (token: number) => void } {
    const subscriber = new FakeSubscriber();
    const inbox = new RedisInbox(new RedisChannelListener('redis', () => subscriber as unknown as RedisSubscriberClient), 'ns:');
    const deliver = (token: number): void => void subscriber.emit('message', subscriber.channel, `g me ${token}`);
    let turn = 0;
    const steps = {
      attempt: async (waiter: boolean): Promise<RedisQueueCheck> => (waiter ? checks[Math.min(turn++, checks.length - 1)](deliver) : queueCheck(false, 0, 0)),
      leave: async () => undefined,
    };
    return { run: () => waitInRedisQueue(inbox, 'me', 20, budget(2_000), steps), deliver };
  }
  const stillWaiting = (waited: Promise<unknown>, ms: number): Promise<unknown> => Promise.race([waited, new Promise((resolve) => setTimeout(() => resolve('still waiting'), ms))]);

  it('does not take a hand-over told while its check was on its way when that check already counted its token', async () => {
    const { run, deliver } = setUp([
      () => queueCheck(false, 100, 90),
      (tell) => {
        // Granted before the second check ran, which found it gone (its claim ran out): told only now.
        tell(150);
        return queueCheck(false, 150, 140);
      },
    ]);
    const waited = run();
    await expect(stillWaiting(waited, 200)).resolves.toBe('still waiting');
    const before = Date.now();
    deliver(151); // granted after the last check: ours, its lease counted from before that check
    const grant = await waited;
    expect(grant).toMatchObject({ token: 151, handedOver: true });
    expect(grant?.since).toBeLessThanOrEqual(before);
  });

  it('ignores a message of a hand-over older than what its last check saw, and takes a later one', async () => {
    const { run, deliver } = setUp([() => queueCheck(false, 500, 450)]);
    const waited = run();
    await new Promise((resolve) => setTimeout(resolve, 5));
    deliver(400);
    await expect(stillWaiting(waited, 100)).resolves.toBe('still waiting');
    deliver(501);
    await expect(waited).resolves.toMatchObject({ token: 501, handedOver: true });
  });

  it('takes a hand-over told while its check was on its way when that check saw only older tokens', async () => {
    const { run } = setUp([
      (tell) => {
        tell(700);
        return queueCheck(false, 650, 600);
      },
    ]);
    await expect(run()).resolves.toMatchObject({ token: 700, handedOver: true });
  });

  it('judges by the server clock too: a token below the time of a check that found no newer token came before it', async () => {
    // The newest token is unknown to the check (0: a lock held by readers), its clock says 9 000 µs.
    const { run, deliver } = setUp([() => queueCheck(false, 0, 9_000)]);
    const waited = run();
    await new Promise((resolve) => setTimeout(resolve, 5));
    deliver(8_000);
    await expect(stillWaiting(waited, 100)).resolves.toBe('still waiting');
    deliver(9_500);
    await expect(waited).resolves.toMatchObject({ token: 9_500, handedOver: true });
  });
});
