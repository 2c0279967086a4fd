// A fair Redis waiter whose inbox (subscriber) connection goes through a proxy, so that a test can deliver
// its hand-over message late. Usage: late-hand-over.worker <permit|lock> <key> <ttlMs> <subscriberPort>
// Prints "acquiring", then "held <token>" once it holds (a permit of 1 place, or the lock), and "lost
// <reason>" if it is told it lost it. Bounded: it exits by itself after 60 s.
import { LockManager, LockService, type Lock, type LockLostError } from './without-nest';
import { RedisLockStrategy } from '@app/distributed-lock/strategies/redis';
import { Redis } from 'ioredis';

async function main(): Promise<void> {
  setTimeout(() => process.exit(0), 60_000).unref();
  const [kind, key, ttl, subscriberPort] = process.argv.slice(2);
  const url = process.env.LOCK_TEST_REDIS_URL as string;
  const client = new Redis(url);
  // The commands go straight to the server; the connection the strategy opens for its inbox, through the proxy.
  const viaProxy = Object.assign(client, { duplicate: () => new Redis({ host: '127.0.0.1', port: Number(subscriberPort) }) });
  const manager = new LockManager(new RedisLockStrategy({ client: viaProxy }));
  const locks = new LockService(manager);
  process.stdout.write('acquiring\n');
  const options = { ttl: Number(ttl), autoExtend: true, waitTimeout: 30_000 };
  const lock: Lock = kind === 'permit' ? await locks.acquirePermit(key, { ...options, permits: 1 }) : await locks.acquire(key, options);
  lock.signal.addEventListener('abort', () => process.stdout.write(`lost ${(lock.signal.reason as LockLostError).reason}\n`));
  process.stdout.write(`held ${lock.fencingToken ?? '-'}\n`);
  await new Promise((resolve) => setTimeout(resolve, 60_000));
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
