import ZooKeeper from 'zookeeper';

/** A server address the services tool put in the environment before the benchmark started. */
export function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set; the benchmark starts its servers with the services tool`);
  return value;
}

/** The five Redis masters of the Redlock cases. */
export const redisUrls = (): string[] => env('LOCK_TEST_REDIS_URLS').split(',');

/** A raw ZooKeeper client on the benchmark's server, connected, with `base` created (persistent). */
export async function connectZooKeeper(base: string): Promise<ZooKeeper> {
  const client = new ZooKeeper({ connect: env('LOCK_TEST_ZOOKEEPER'), timeout: 10_000, debug_level: ZooKeeper.constants.ZOO_LOG_LEVEL_ERROR, host_order_deterministic: false });
  await new Promise<void>((resolve) => {
    client.once('connect', () => resolve());
    client.init({});
  });
  await client.create(base, '', ZooKeeper.constants.ZOO_PERSISTENT).catch(() => undefined);
  return client;
}
