// ioredis subscribes again by itself after a reconnection, and leaves that call's promise without a handler.
// A lock service closed while that re-subscribe is on its way rejected it unhandled ("Connection is
// closed."), which ends a Node process by default: seen once as an unhandled error of CI run 18, after a
// Sentinel failover test, and reproduced here by holding back the server's replies through a proxy.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { LockManager, LockService } from '@app/distributed-lock';
import { RedisLockStrategy } from '@app/distributed-lock/strategies/redis';
import { HeldBackProxy } from '../support/held-back-proxy';

const run = randomUUID().slice(0, 8);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('Redis: a lock service closed while its subscriber subscribes again', () => {
  it('leaves no unhandled rejection behind', async () => {
    const target = new URL(process.env.LOCK_TEST_REDIS_URL as string);
    const proxy = new HeldBackProxy({ host: target.hostname, port: Number(target.port) });
    const port = await proxy.start();
    // A client of the user's, through the proxy: the strategy's subscriber is a duplicate of it.
    const client = new Redis({ host: '127.0.0.1', port, retryStrategy: () => 20 });
    client.on('error', () => undefined);
    let subscriber: Redis | undefined;
    const duplicate = client.duplicate.bind(client);
    Object.assign(client, {
      duplicate: (...args: Parameters<Redis['duplicate']>) => (subscriber = duplicate(...args)),
    });
    const holderManager = new LockManager(new RedisLockStrategy({ connection: process.env.LOCK_TEST_REDIS_URL as string }));
    const manager = new LockManager(new RedisLockStrategy({ client }));
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const key = `resubscribe-close:${run}`;
      const holder = await new LockService(holderManager).acquire(key);
      // A wait: the strategy subscribes its inbox on a connection of its own.
      const waiting = new LockService(manager).acquire(key, { waitTimeout: 20_000 }).catch((error: unknown) => error);
      for (let waited = 0; subscriber?.status !== 'ready'; waited += 10) {
        if (waited > 5_000) throw new Error('the strategy never subscribed');
        await sleep(10);
      }
      await sleep(100);
      const subscribed = subscriber;
      // Cut: both connections come back, and the subscriber subscribes again as it becomes ready. From that
      // moment the server's replies are held back, so the close below finds the re-subscribe on its way.
      const resubscribing = new Promise<void>((resolve) =>
        subscribed.once('ready', () => {
          proxy.holdBack();
          resolve();
        }),
      );
      proxy.cut();
      await resubscribing;
      await manager.close(); // QUIT gets no answer: the subscriber is disconnected after its grace
      await waiting;
      await sleep(200);
      expect(unhandled).toEqual([]);
      proxy.letThrough();
      await holder.release();
    } finally {
      process.off('unhandledRejection', onUnhandled);
      proxy.letThrough();
      await Promise.allSettled([manager.close(), holderManager.close()]);
      client.disconnect();
      await proxy.close();
    }
  }, 30_000);
});
