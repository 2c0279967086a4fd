import type { RedisSubscriberClient } from './redis-client.type';

/**
 * ioredis subscribes again by itself after a reconnection, and leaves that call's promise without a handler:
 * a client closed while the re-subscribe is on its way rejects it unhandled ("Connection is closed."), which
 * ends a Node process by default. Here every `subscribe` of `client` gets a handler of its own; callers get
 * the same promise and see its outcome as before.
 */
export function withHandledSubscribes<T extends Pick<RedisSubscriberClient, 'subscribe'>>(client: T): T {
  const subscribe = client.subscribe.bind(client) as (...args: unknown[]) => Promise<unknown>;
  const handled = (...args: unknown[]): Promise<unknown> => {
    const pending = subscribe(...args);
    pending.catch(() => undefined);
    return pending;
  };
  // An own property: ioredis's re-subscribe calls `this.subscribe`, which finds it before the prototype's.
  Object.assign(client, { subscribe: handled });
  return client;
}
