import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import type { RedisSubscriberClient } from './redis-client.type';
import { closeRedisClient } from './close-redis-client';
import { withHandledSubscribes } from './handled-subscribes';

type MessageHandler = (message: string) => void;

/**
 * One dedicated subscriber connection (a connection in subscribe mode can send nothing else), shared by
 * every waiter of a strategy. Channels are reference-counted, and kept subscribed for a short linger after
 * their last waiter leaves so that a hot key does not pay SUBSCRIBE/UNSUBSCRIBE on every wait.
 * ioredis re-subscribes after a reconnect (with a handler here, see `withHandledSubscribes`); messages
 * published meanwhile are lost, which the waiters' bounded re-check covers.
 */
export class RedisChannelListener {
  private subscriber: RedisSubscriberClient | undefined;
  private readonly handlers = new Map<string, Set<MessageHandler>>();
  private readonly subscribed = new Map<string, Promise<unknown>>();
  /** Channels whose SUBSCRIBE the server confirmed (and not unsubscribed since). */
  private readonly confirmed = new Set<string>();
  private readonly lingering = new Map<string, NodeJS.Timeout>();
  private closed = false;
  private readonly onMessage = (channel: string, message: string): void => {
    const set = this.handlers.get(channel);
    if (set) for (const handler of [...set]) handler(message);
  };

  constructor(
    /** The strategy's name, for its errors. */
    private readonly strategy: string,
    private readonly createSubscriber: () => RedisSubscriberClient,
    private readonly lingerMs = 2_000,
  ) {}

  /** True while `channel` is subscribed (or being subscribed): listening to it costs no round trip. */
  isSubscribed(channel: string): boolean {
    return this.subscribed.has(channel);
  }

  /** True once the server confirmed the subscription to `channel`: it counts this connection among the channel's subscribers. */
  isConfirmed(channel: string): boolean {
    return this.confirmed.has(channel);
  }

  /**
   * Calls `handler` for every message on `channel` until the returned function is called. Rejects with
   * `LockBackendUnavailableError` once the strategy is closed.
   */
  async listen(channel: string, handler: MessageHandler): Promise<() => void> {
    if (this.closed) throw new LockBackendUnavailableError(this.strategy, 'subscribe (the strategy is closed)', 0);
    let set = this.handlers.get(channel);
    if (!set) {
      set = new Set();
      this.handlers.set(channel, set);
    }
    set.add(handler);
    const linger = this.lingering.get(channel);
    if (linger) {
      clearTimeout(linger);
      this.lingering.delete(channel);
    }
    let pending = this.subscribed.get(channel);
    if (!pending) {
      pending = this.connection().subscribe(channel);
      const subscribing = pending;
      this.subscribed.set(channel, subscribing);
      subscribing.then(
        () => {
          if (this.subscribed.get(channel) === subscribing) this.confirmed.add(channel);
        },
        () => this.subscribed.delete(channel),
      );
    }
    try {
      await pending;
    } catch (error) {
      set.delete(handler);
      throw error;
    }
    return () => this.leave(channel, handler);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.lingering.values()) clearTimeout(timer);
    this.lingering.clear();
    this.handlers.clear();
    this.subscribed.clear();
    this.confirmed.clear();
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    if (subscriber) {
      subscriber.off('message', this.onMessage);
      await closeRedisClient(subscriber);
    }
  }

  private leave(channel: string, handler: MessageHandler): void {
    const set = this.handlers.get(channel);
    if (!set) return;
    set.delete(handler);
    if (set.size > 0 || this.closed) return;
    const timer = setTimeout(() => {
      this.lingering.delete(channel);
      if ((this.handlers.get(channel)?.size ?? 0) > 0) return;
      this.handlers.delete(channel);
      this.subscribed.delete(channel);
      this.confirmed.delete(channel);
      this.subscriber?.unsubscribe(channel).catch(() => undefined);
    }, this.lingerMs);
    timer.unref?.();
    this.lingering.set(channel, timer);
  }

  private connection(): RedisSubscriberClient {
    if (!this.subscriber) {
      this.subscriber = withHandledSubscribes(this.createSubscriber());
      this.subscriber.on('message', this.onMessage);
      // While the connection is lost the server does not count us; after ioredis re-subscribes we do not
      // know when it does again, so those channels stay unconfirmed (callers then assume the cautious side).
      this.subscriber.on('close', () => this.confirmed.clear());
      // Errors surface through the commands; an unhandled 'error' event would crash the process.
      this.subscriber.on('error', () => undefined);
    }
    return this.subscriber;
  }
}
