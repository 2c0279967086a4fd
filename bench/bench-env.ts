import type { NzkModule } from '@app/distributed-lock/strategies/zookeeper/node-zookeeper-client.type';
import { ZooKeeperClient } from '@app/distributed-lock/strategies/zookeeper/zookeeper-client';

/** A server address the services tool put in the environment before the benchmark started. */
export function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set; the benchmark starts its servers with the services tool`);
  return value;
}

/** The five Redis masters of the Redlock cases. */
export const redisUrls = (): string[] => env('LOCK_TEST_REDIS_URLS').split(',');

/** ZooKeeper's create modes. */
export const ZK_CREATE = Object.freeze({ PERSISTENT: 0, EPHEMERAL: 1, EPHEMERAL_SEQUENTIAL: 3 });

/**
 * A raw ZooKeeper client on the benchmark's server, connected, with `base` created (persistent): the client
 * the strategy uses (node-zookeeper-client, as the strategy wraps it), so a floor differs from the strategy
 * only in the calls it makes.
 */
export async function connectZooKeeper(base: string): Promise<ZooKeeperClient> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const client = new ZooKeeperClient(require('node-zookeeper-client') as NzkModule, { connect: env('LOCK_TEST_ZOOKEEPER'), timeout: 10_000 });
  await new Promise<void>((resolve) => {
    client.once('connect', () => resolve());
    client.init();
  });
  await client.create(base, '', ZK_CREATE.PERSISTENT).catch(() => undefined);
  return client;
}
