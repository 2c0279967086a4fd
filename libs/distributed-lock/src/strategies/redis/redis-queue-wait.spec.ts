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
  /** A wait whose checks answer `checks` in turn (the last one again and again), re-checking every `recheckMs` (20). */
  function setUp(
    checks: Array<(deliver: (token: number) => void, wake: () => void) => RedisQueueCheck>,
    recheckMs = 20,
    afterWakeMs?: number,
  ): { run: () => ReturnType<typeof waitInRedisQueue>; deliver: (token: number) => void; wake: () => void; checks: () => number } {
    const subscriber = new FakeSubscriber();
    const inbox = new RedisInbox(new RedisChannelListener('redis', () => subscriber as unknown as RedisSubscriberClient), 'ns:');
    const deliver = (token: number): void => void subscriber.emit('message', subscriber.channel, `g me ${token}`);
    const wake = (): void => void subscriber.emit('message', subscriber.channel, 'w me');
    let turn = 0;
    const steps = {
      attempt: async (waiter: boolean): Promise<RedisQueueCheck> => (waiter ? checks[Math.min(turn++, checks.length - 1)](deliver, wake) : queueCheck(false, 0, 0)),
      leave: async () => undefined,
    };
    return { run: () => waitInRedisQueue(inbox, 'me', recheckMs, budget(2_000), steps, afterWakeMs), deliver, wake, checks: () => turn };
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

  it('checks again at once when a release wakes it (barging: the lock was left free), and a wake is not a grant', async () => {
    // Re-checks 10 s apart: only the wake can bring the second check within the test.
    const { run, wake, checks } = setUp([() => queueCheck(false, 100, 90), () => queueCheck(true, 120, 0)], 10_000);
    const waited = run();
    await expect(stillWaiting(waited, 50)).resolves.toBe('still waiting');
    expect(checks()).toBe(1);
    wake();
    await expect(waited).resolves.toMatchObject({ token: 120, handedOver: false });
    expect(checks()).toBe(2);
  });

  it('checks again at once when the wake came while its check was on its way (the check may have run before the release)', async () => {
    const { run, checks } = setUp(
      [
        (_deliver, tellWake) => {
          tellWake();
          return queueCheck(false, 100, 90);
        },
        () => queueCheck(true, 130, 0),
      ],
      10_000,
    );
    await expect(stillWaiting(run(), 500)).resolves.toMatchObject({ token: 130, handedOver: false });
    expect(checks()).toBe(2);
  });

  it('barging: after a wake whose check found the lock taken again, checks once more when the window has passed', async () => {
    // Woken once per turn as head (the release does not wake it again): the window's end brings the next check.
    const { run, wake, checks } = setUp([() => queueCheck(false, 100, 90), () => queueCheck(false, 110, 95), () => queueCheck(true, 140, 0)], 10_000, 30);
    const waited = run();
    await expect(stillWaiting(waited, 50)).resolves.toBe('still waiting');
    wake();
    await expect(stillWaiting(waited, 1_000)).resolves.toMatchObject({ token: 140, handedOver: false });
    expect(checks()).toBe(3);
  });
});
