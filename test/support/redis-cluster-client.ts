import type { LockStrategy } from '@app/distributed-lock';
import { RedisLockStrategy, type RedisLockStrategyOptions } from '@app/distributed-lock/strategies/redis';
import { Cluster, type ClusterOptions } from 'ioredis';

/** The startup nodes of a `redis://host:port,…` list (what the services tool puts in LOCK_TEST_*_CLUSTER). */
export function clusterNodesOf(urls: string): Array<{ host: string; port: number }> {
  return urls
    .split(',')
    .filter(Boolean)
    .map((url) => {
      const parsed = new URL(url);
      return { host: parsed.hostname, port: Number(parsed.port) };
    });
}

/**
 * An ioredis `Cluster` as an application would make one: commands fail fast while a node is down (2 retries),
 * the slot map is refreshed when a node goes, and errors surface through commands, not as events.
 */
export function clusterClient(urls: string, options: ClusterOptions = {}): Cluster {
  const client = new Cluster(clusterNodesOf(urls), {
    clusterRetryStrategy: (attempt) => Math.min(100 * attempt, 1_000),
    ...options,
    redisOptions: { maxRetriesPerRequest: 2, connectTimeout: 2_000, ...options.redisOptions },
  });
  client.on('error', () => undefined);
  return client;
}

/**
 * A `RedisLockStrategy` on a `Cluster` of its own, closed with the strategy: a user's client is never
 * closed by the strategy, so the test closes it the way the user would.
 */
export function clusterStrategy(urls: string, options: Omit<RedisLockStrategyOptions, 'client' | 'connection'> = {}, clientOptions: ClusterOptions = {}): RedisLockStrategy {
  const client = clusterClient(urls, clientOptions);
  const strategy = new RedisLockStrategy({ ...options, client });
  return new Proxy(strategy, {
    get: (target, property) =>
      property === 'close'
        ? async () => {
            await target.close();
            await client.quit().catch(() => client.disconnect());
          }
        : Reflect.get(target, property, target),
  }) satisfies LockStrategy;
}
