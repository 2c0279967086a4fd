import type { OwnedRedisClient } from './redis-connection';

/** ioredis connection states of a connection being made (not failed yet): it may answer once made. */
const BEING_MADE = new Set(['wait', 'connecting', 'connect']);

/** What ends the making of a connection: made, or failed. */
const SETTLED_ON = ['ready', 'close', 'end'] as const;

/** True when at least one of `nodes` is still making its connection. */
export function connectionsBeingMade(nodes: readonly OwnedRedisClient[]): boolean {
  return nodes.some(({ client }) => BEING_MADE.has(client.status));
}

/**
 * Resolves once `wanted` of the connections of `nodes` being made now are made, or once none is being made
 * any more. A round that ran while a fresh strategy was still connecting (a connection, its ready check and
 * the scripts' first load take several round trips, far more than the node timeout on a remote server or
 * a busy host) is asked again after this, rather than blaming masters that were never silent. Bounded by
 * the client's own connect timeout, after which a connection that is not made fails.
 */
export function connectionsMade(nodes: readonly OwnedRedisClient[], wanted: number): Promise<void> {
  const clients = nodes.map(({ client }) => client).filter((client) => BEING_MADE.has(client.status));
  if (clients.length === 0) return Promise.resolve();
  return new Promise((resolve) => {
    let made = 0;
    let settled = 0;
    const stops = clients.map((client) => {
      const settle = (): void => {
        stop();
        settled += 1;
        if (client.status === 'ready') made += 1;
        if (made >= wanted || settled === clients.length) {
          for (const other of stops) other();
          resolve();
        }
      };
      const stop = (): void => {
        for (const event of SETTLED_ON) client.off(event, settle);
      };
      for (const event of SETTLED_ON) client.on(event, settle);
      return stop;
    });
  });
}
