import { randomUUID } from 'node:crypto';
import { createServer, connect, type AddressInfo, type Server } from 'node:net';
import { LockManager, LockService } from '@app/distributed-lock';
import { RedlockStrategy } from '@app/distributed-lock/strategies/redis';
import { Redis } from 'ioredis';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A TCP proxy in front of a master that, when armed, lets an acquire of `marker` through but never lets its
 * answer back, then resets both sides: a network blip in the middle of a round. ioredis re-sends the
 * unanswered acquire once it has reconnected.
 */
function resettingProxy(target: number, marker: string, armed: { count: number }): Promise<{ port: number; server: Server }> {
  const server = createServer((client) => {
    const upstream = connect(target, '127.0.0.1');
    client.on('data', (data) => {
      if (armed.count > 0 && data.includes(Buffer.from(marker))) {
        armed.count -= 1;
        upstream.write(data);
        upstream.pause();
        client.pause();
        setTimeout(() => {
          client.destroy();
          upstream.destroy();
        }, 20);
        return;
      }
      upstream.write(data);
    });
    upstream.on('data', (data) => client.write(data));
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ port: (server.address() as AddressInfo).port, server })));
}

describe('Redlock: connections reset in the middle of a round', () => {
  const servers: PrivateRedis[] = [];
  const proxies: Server[] = [];

  beforeAll(async () => {
    for (let i = 0; i < 3; i += 1) servers.push(await startPrivateRedis());
  }, 30_000);

  afterAll(async () => {
    for (const proxy of proxies) proxy.close();
    await Promise.all(servers.map((server) => server.stop()));
  });

  it('leaves no key behind on the masters whose connection came back after the round failed', async () => {
    const key = `reset-${randomUUID().slice(0, 8)}`;
    const ports = servers.map((server) => Number(new URL(server.url).port));
    const armed = { count: 0 };
    const proxied = [ports[0]];
    for (const port of ports.slice(1)) {
      const proxy = await resettingProxy(port, key, armed);
      proxies.push(proxy.server);
      proxied.push(proxy.port);
    }
    // Reconnecting after 300 ms: well after the round (100 ms per master) has failed and released.
    const here = new LockManager(new RedlockStrategy({ connections: proxied.map((port) => ({ host: '127.0.0.1', port, retryStrategy: () => 300 })) }));
    const other = new LockManager(new RedlockStrategy({ connections: servers.map((server) => server.url) }));
    const raw = servers.map((server) => new Redis(server.url));
    try {
      await (await new LockService(here).acquire(`${key}-warm-up`)).release();
      armed.count = 2;
      await new LockService(here).acquire(key, { waitTimeout: 300 }).catch(() => undefined);
      await sleep(1_500); // reconnected, the unanswered acquires re-sent, and the releases after them
      const left = await Promise.all(raw.map((client) => client.keys(`*${key}*`)));
      expect(left.flat()).toEqual([]);
      const next = await new LockService(other).acquire(key, { waitTimeout: 2_000 });
      await next.release();
    } finally {
      raw.forEach((client) => client.disconnect());
      await Promise.all([here.close(), other.close()].map((closing) => closing.catch(() => undefined)));
    }
  }, 30_000);
});
