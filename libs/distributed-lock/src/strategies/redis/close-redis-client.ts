import type { RedisSubscriberClient } from './redis-client.type';

/**
 * Closes a client the strategy created: QUIT when connected (pending replies still arrive), otherwise, or
 * when QUIT gets no answer within `graceMs`, a plain disconnect. A dead server never blocks shutdown.
 * A disconnect follows a clean QUIT too: a Sentinel client's failover detector subscribes to each Sentinel on
 * connections of its own, which QUIT leaves open (redis/ioredis#1362) and only a disconnect ends; they kept
 * the process alive after its shutdown. On any other client it changes nothing once QUIT has closed it.
 */
export async function closeRedisClient(client: Pick<RedisSubscriberClient, 'quit' | 'disconnect' | 'status'>, graceMs = 1_000): Promise<void> {
  if (client.status !== 'ready') {
    client.disconnect();
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  const quit = client.quit().then(
    () => undefined,
    () => undefined,
  );
  const timedOut = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, graceMs);
    timer.unref?.();
  });
  await Promise.race([quit, timedOut]);
  clearTimeout(timer);
  // After QUIT as well (see above); when QUIT got no answer, this is what closes the connection.
  client.disconnect();
}
