import type { RedisSubscriberClient } from './redis-client.type';

/**
 * Closes a client the strategy created: QUIT when connected (pending replies still arrive), otherwise, or
 * when QUIT gets no answer within `graceMs`, a plain disconnect. A dead server never blocks shutdown.
 */
export async function closeRedisClient(client: Pick<RedisSubscriberClient, 'quit' | 'disconnect' | 'status'>, graceMs = 1_000): Promise<void> {
  if (client.status !== 'ready') {
    client.disconnect();
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  const quit = client.quit().then(
    () => true,
    () => false,
  );
  const timedOut = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), graceMs);
    timer.unref?.();
  });
  const clean = await Promise.race([quit, timedOut]);
  clearTimeout(timer);
  if (!clean) client.disconnect();
}
