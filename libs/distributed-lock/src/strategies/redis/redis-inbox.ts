import { randomUUID } from 'node:crypto';
import type { RedisChannelListener } from './redis-channel-listener';

/** Called with the fencing token of a lock a release handed to the waiting owner. */
type HandOverListener = (token: number) => void;

/** What a waiter hears on the inbox: a hand-over (with its token), or a wake (barging mode: the lock is free, try now). */
interface Expected {
  readonly handedOver: HandOverListener;
  readonly woken?: () => void;
}

/**
 * One channel per strategy instance on which a release tells this client's waiters that the lock was
 * handed to them ("g <owner> <token>"), or, for a barging lock, that it is free and theirs to try for
 * ("w <owner>", no token: not a grant). A hand-over reaches only the connection of the waiter it names,
 * however many instances wait on the key (a channel per key would deliver it to all of them), and the
 * channel is subscribed once for the strategy's life, not once per key.
 */
export class RedisInbox {
  readonly channel: string;
  private readonly expected = new Map<string, Expected>();
  private opening: Promise<unknown> | undefined;

  /**
   * `barging`: this client's waiters take wakes (`fair: false`); the channel's name then ends in ":b", by which
   * a semaphore's release tells a waiter to wake from one to hand places to (see serve_head in the scripts).
   */
  constructor(
    private readonly listener: RedisChannelListener,
    namespace: string,
    barging = false,
  ) {
    this.channel = `${namespace}inbox:${randomUUID()}${barging ? ':b' : ''}`;
  }

  /** True once the subscription was asked for: waiting from now on costs no SUBSCRIBE. */
  get isOpen(): boolean {
    return this.opening !== undefined;
  }

  /**
   * Calls `listener` when a hand-over to `owner` arrives, and `woken` when a release woke it to try (barging
   * mode), until `stop` is called. `ready` resolves once
   * the server confirmed the subscription, so that a hand-over published after it is not missed; it
   * rejects (and `stop` is implied) if the subscription fails.
   */
  expect(owner: string, listener: HandOverListener, woken?: () => void): { readonly ready: Promise<void>; readonly stop: () => void } {
    const expected: Expected = { handedOver: listener, woken };
    this.expected.set(owner, expected);
    const stop = (): void => {
      if (this.expected.get(owner) === expected) this.expected.delete(owner);
    };
    const ready = this.open().then(
      () => undefined,
      (error: unknown) => {
        stop();
        throw error;
      },
    );
    // A caller that does not wait for the subscription (Redlock, while its first master is down) must not
    // leave an unhandled rejection behind; one that awaits `ready` still gets the error.
    ready.catch(() => undefined);
    return { ready, stop };
  }

  private open(): Promise<unknown> {
    if (!this.opening) {
      const opening = this.listener.listen(this.channel, (message) => this.deliver(message));
      this.opening = opening;
      // A failed SUBSCRIBE (connection lost) is tried again by the next waiter.
      opening.catch(() => {
        if (this.opening === opening) this.opening = undefined;
      });
    }
    return this.opening;
  }

  /** A hand-over to `owner` learned otherwise than by a message (the release that made it ran on this client). */
  handOver(owner: string, token: number): void {
    this.expected.get(owner)?.handedOver(token);
  }

  /** A wake for `owner` learned otherwise than by a message (barging: the release that left the places free ran on this client). */
  wake(owner: string): void {
    this.expected.get(owner)?.woken?.();
  }

  private deliver(message: string): void {
    if (message.startsWith('w ')) {
      this.expected.get(message.slice(2))?.woken?.();
      return;
    }
    if (!message.startsWith('g ')) return;
    const space = message.lastIndexOf(' ');
    if (space <= 2) return;
    this.expected.get(message.slice(2, space))?.handedOver(Number(message.slice(space + 1)));
  }
}
