import type { RedisLockClient } from './redis-client.type';

/** The last login each client's server refused (WRONGPASS), until the client is ready again. */
const refusals = new WeakMap<object, Error>();

/**
 * Keeps, for `client`, the login its server last refused. ioredis fails the commands queued when the login
 * is refused with that refusal, then closes the connection to try again; a command sent in between fails
 * with the closing ("Reached the max retries per request limit", "Connection is closed"), which says
 * nothing of the password. With this record such a failure is told as the refused login it comes from
 * (see redisCallError). A ready connection clears it.
 */
export function watchLoginRefusals(client: Pick<RedisLockClient, 'on'>): void {
  client.on('error', (error: unknown) => {
    if (error instanceof Error && /^WRONGPASS\b/.test(error.message)) refusals.set(client, error);
  });
  client.on('ready', () => refusals.delete(client));
}

/** The login `client`'s server refused since it was last ready, if any (see watchLoginRefusals). */
export function loginRefusalOf(client: object): Error | undefined {
  return refusals.get(client);
}
