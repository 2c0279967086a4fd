import { EventEmitter } from 'node:events';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import { RedisChannelListener } from './redis-channel-listener';
import type { RedisSubscriberClient } from './redis-client.type';

/** A subscriber connection that confirms every SUBSCRIBE at once. */
class FakeSubscriber extends EventEmitter {
  readonly subscribed: string[] = [];
  status = 'ready';
  async subscribe(channel: string): Promise<number> {
    this.subscribed.push(channel);
    return this.subscribed.length;
  }
  async unsubscribe(): Promise<number> {
    return 0;
  }
  async quit(): Promise<'OK'> {
    return 'OK';
  }
  disconnect(): void {}
}

describe('RedisChannelListener', () => {
  it('delivers messages until stopped', async () => {
    const subscriber = new FakeSubscriber();
    const listener = new RedisChannelListener('redis', () => subscriber as unknown as RedisSubscriberClient);
    const heard: string[] = [];
    const stop = await listener.listen('c', (message) => heard.push(message));
    expect(listener.isConfirmed('c')).toBe(true);
    subscriber.emit('message', 'c', 'r');
    stop();
    subscriber.emit('message', 'c', 'r');
    expect(heard).toEqual(['r']);
    await listener.close();
  });

  it('refuses to listen once closed, with LockBackendUnavailableError naming the strategy', async () => {
    const subscriber = new FakeSubscriber();
    const listener = new RedisChannelListener('orders-redis', () => subscriber as unknown as RedisSubscriberClient);
    await listener.close();
    const error = await listener.listen('c', () => undefined).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockBackendUnavailableError);
    expect(error).toMatchObject({ strategy: 'orders-redis' });
    expect(subscriber.subscribed).toEqual([]);
  });
});
