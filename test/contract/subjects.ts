import { InMemoryLockStrategy, type LockStrategy } from '@app/distributed-lock';
import { RedisLockStrategy, RedlockStrategy } from '@app/distributed-lock/strategies/redis';
import { Redis } from 'ioredis';
import { redisLockKeys } from '../../libs/distributed-lock/src/strategies/redis/redis-keys';
import type { ContractSubject } from './contract-subject';

function requiredEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the tests through \`npm test\` (which starts the servers) or point it at your server`);
  return value;
}

/** Deletes a lock's key on the given Redis servers with a throwaway client, as an operator would. */
async function deleteRedisLock(urls: readonly string[], key: string, namespace = 'dlock:'): Promise<void> {
  await Promise.all(
    urls.map(async (url) => {
      const raw = new Redis(url, { maxRetriesPerRequest: 1 });
      try {
        await raw.del(redisLockKeys(namespace, key).keys[0]);
      } finally {
        raw.disconnect();
      }
    }),
  );
}

const redisUrls = (): string[] => requiredEnv('LOCK_TEST_REDIS_URLS').split(',');

/**
 * Every strategy the contract suite runs against. Backends whose servers the test setup starts add
 * their line here; the cross-process worker looks subjects up by name.
 */
// In-process locks are shared through one strategy object: that object is "the server" both clients talk to.
let memoryServer: InMemoryLockStrategy | undefined;

export const subjects: readonly ContractSubject[] = [
  {
    name: 'memory',
    capabilities: new InMemoryLockStrategy().capabilities,
    create: async () => (memoryServer ??= new InMemoryLockStrategy()),
    removeBehindBack: async (strategy: LockStrategy, key: string) => (strategy as InMemoryLockStrategy).forceRelease(key),
  },
  {
    name: 'redis (fair)',
    capabilities: { fencing: true, fifo: true, sharedLocks: false, crossProcess: true },
    create: async () => new RedisLockStrategy({ connection: requiredEnv('LOCK_TEST_REDIS_URL') }),
    removeBehindBack: (_strategy, key) => deleteRedisLock([requiredEnv('LOCK_TEST_REDIS_URL')], key),
  },
  {
    name: 'redis (barging)',
    capabilities: { fencing: true, fifo: false, sharedLocks: false, crossProcess: true },
    create: async () => new RedisLockStrategy({ connection: requiredEnv('LOCK_TEST_REDIS_URL'), fair: false, name: 'redis-barging' }),
    removeBehindBack: (_strategy, key) => deleteRedisLock([requiredEnv('LOCK_TEST_REDIS_URL')], key),
  },
  {
    name: 'redlock (5 masters)',
    capabilities: { fencing: false, fifo: false, sharedLocks: false, crossProcess: true },
    create: async () => new RedlockStrategy({ connections: redisUrls() }),
    removeBehindBack: (_strategy, key) => deleteRedisLock(redisUrls(), key, 'dlock:redlock:'),
  },
];

export function subjectNamed(name: string): ContractSubject {
  const subject = subjects.find((candidate) => candidate.name === name);
  if (!subject) throw new Error(`No contract subject named "${name}"`);
  return subject;
}
