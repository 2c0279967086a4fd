import type { Redis, RedisOptions } from 'ioredis';
import { loadPeerDependency } from '../load-peer-dependency';
import { withHandledSubscribes } from './handled-subscribes';

/**
 * What Sentinel publishes once the replica it promoted is a master and it starts pointing the other
 * replicas at it: from this moment Sentinel names the promoted replica to clients that ask for the
 * master ("master <name> <ip> <port>", the old master's address).
 */
const RECONF_CHANNEL = '+failover-state-reconf-slaves';

/** How long a Sentinel connection of the watch waits before it tries again, in ms. */
const RECONNECT_MS = 1_000;

/**
 * Tells the strategy as soon as a Sentinel that fails its master over starts naming the promoted replica:
 * one subscriber connection per Sentinel (at most `sentinelMaxConnections`, 10 by default) on
 * `+failover-state-reconf-slaves`. ioredis's `failoverDetector` drops a client's connection only at
 * `+switch-master`, which Sentinel publishes once every other replica has resynced with the new master
 * (seconds on a large data set, up to `failover-timeout` when one lags): meanwhile clients that ask for the
 * master get the new one, while connections still on the old one, frozen through its failover and back,
 * lock there too. Moving the strategy's connection at the first announcement closes that window.
 */
export class RedisSentinelWatch {
  private readonly subscribers: Redis[];

  constructor(options: RedisOptions, strategy: string, onFailover: () => void) {
    const { Redis: RedisClient } = loadPeerDependency<typeof import('ioredis')>('ioredis', strategy);
    const sentinels = (options.sentinels ?? []).slice(0, options.sentinelMaxConnections ?? 10);
    this.subscribers = sentinels.map((sentinel) => {
      const subscriber = withHandledSubscribes(new RedisClient({
        host: sentinel.host ?? '127.0.0.1',
        port: sentinel.port ?? 26379,
        family: sentinel.family,
        username: options.sentinelUsername,
        password: options.sentinelPassword,
        tls: options.sentinelTLS,
        connectTimeout: options.connectTimeout,
        enableReadyCheck: false,
        retryStrategy: () => RECONNECT_MS,
      }));
      subscriber.on('error', () => undefined);
      subscriber.on('message', (channel: string, message: string) => {
        if (channel === RECONF_CHANNEL && message.split(' ')[1] === options.name) onFailover();
      });
      // ioredis subscribes again after each reconnection; a Sentinel that is down is tried every second.
      subscriber.subscribe(RECONF_CHANNEL).catch(() => undefined);
      return subscriber;
    });
  }

  close(): void {
    for (const subscriber of this.subscribers) subscriber.disconnect();
  }
}

/** The options of a Sentinel-backed ioredis client (a `Redis` made with `sentinels` and `name`), else undefined. */
export function sentinelOptionsOf(client: object): RedisOptions | undefined {
  const options = (client as { options?: RedisOptions }).options;
  return options?.sentinels?.length && options.name ? options : undefined;
}
